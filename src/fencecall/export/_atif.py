"""A conversation as an ATIF trajectory (Harbor's Agent Trajectory Interchange Format,
``ATIF-v1.8``), for the tools that read trajectories (Harbor's viewer, training sets).

Each turn is a step: a prompt a ``user`` step; a reply an ``agent`` step holding its text
(``message``), its calls (``tool_calls``), their results (``observation``, each with the
``source_call_id`` of its call) and what it cost (``metrics``: tokens, cost, and the scored
tokens of ``--logprobs``); a note of the loop (a limit, a compaction, how the run ended) a
``system`` step, its kind in ``extra``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import fields, is_dataclass
from decimal import Decimal
from typing import Any

from .. import __version__
from ..accounting import Price, Pricing
from ..message import Message, Note, Nudge, ReplyRecord
from ._turns import Action, Turn

ATIF_VERSION = "ATIF-v1.8"
PriceOf = Callable[[str], Price | None]
"""The configured price of ``provider/model``, if any (else ``genai-prices``' list)."""


def trajectory(name: str, turns: list[Turn], settings: dict[str, Any],
               prices: PriceOf) -> dict[str, Any]:
    """The ATIF trajectory of conversation ``name``, as a JSON object."""
    steps = [_step(index, turn, prices) for index, turn in enumerate(turns, 1)]
    agent: dict[str, Any] = {"name": "fencecall", "version": __version__}
    model = settings.get("model") or next(
        (t.message.reply.model for t in turns if t.message.reply), None)
    if isinstance(model, str) and model:
        agent["model_name"] = model
    agent["extra"] = {key: settings[key] for key in ("format", "tools", "sandbox")
                      if settings.get(key) is not None}
    found: dict[str, Any] = {"schema_version": ATIF_VERSION, "session_id": name,
                             "agent": agent, "steps": steps,
                             "final_metrics": _totals(steps)}
    if not steps:  # ATIF wants at least one step
        found["steps"] = [{"step_id": 1, "source": "system", "message": "(no messages)"}]
    return found


def _step(index: int, turn: Turn, prices: PriceOf) -> dict[str, Any]:
    message = turn.message
    step: dict[str, Any] = {"step_id": index, "timestamp": message.timestamp.isoformat(),
                            "source": turn.kind, "message": message.content}
    if turn.kind == "system":
        step["extra"] = _note_extra(message)
        return step
    if turn.kind == "user":
        return step
    reply = message.reply
    if turn.actions:
        step["tool_calls"] = [_tool_call(action) for action in turn.actions]
    results = [_result(result, action.call_id) for action in turn.actions
               for result in action.results] + [_result(note, None) for note in turn.notes]
    if results:
        step["observation"] = {"results": results}
    if reply is not None:
        if reply.model:
            step["model_name"] = f"{reply.provider}/{reply.model}" if reply.provider \
                else reply.model
        step["metrics"] = _metrics(reply, prices)
        extra = {key: value for key, value in (("cut", reply.stop_reason if reply.cut else None),
                                               ("loop", reply.loop)) if value is not None}
        if extra:
            step["extra"] = extra
    return step


def _tool_call(action: Action) -> dict[str, Any]:
    return {"tool_call_id": action.call_id, "function_name": action.tool,
            "arguments": dict(action.arguments)}


def _result(message: Message, call_id: str | None) -> dict[str, Any]:
    found: dict[str, Any] = {"content": message.content}
    if call_id is not None:
        found["source_call_id"] = call_id
    extra: dict[str, Any] = {}
    if message.call is not None:
        extra.update(outcome=message.call.outcome, duration_s=message.call.duration_s)
    elif message.status is not None:
        extra["outcome"] = message.status.value
    if message.exit_code is not None:
        extra["exit_code"] = message.exit_code
    if message.note is not None:
        extra["note"] = _note_name(message.note)
    if extra:
        found["extra"] = extra
    return found


def _metrics(reply: ReplyRecord, prices: PriceOf) -> dict[str, Any]:
    """Tokens as ATIF counts them (``prompt_tokens`` with the cached ones), the cost as
    ``fencecall stats`` prices it, and the scored tokens (a log probability of minus
    infinity, which JSON cannot hold, written as -1e30; the tokens' text in ``extra``)."""
    found: dict[str, Any] = {}
    if (usage := reply.usage) is not None:
        found.update(prompt_tokens=usage.all_input, completion_tokens=usage.output_tokens,
                     cached_tokens=usage.cache_read_tokens)
        key = f"{reply.provider}/{reply.model}" if reply.provider else reply.model
        cost = Pricing(reply.model, reply.provider, reply.provider_url, prices(key)).cost(usage)
        if cost is not None:
            found["cost_usd"] = float(cost)
        extra = {"cache_write_tokens": usage.cache_write_tokens, "counted": reply.counted}
        found["extra"] = {k: v for k, v in extra.items() if v}
    if reply.logprobs is not None:
        found["logprobs"] = [t.logprob if math.isfinite(t.logprob) else -1e30
                             for t in reply.logprobs]
        ids = [t.token_id for t in reply.logprobs]
        if all(i is not None for i in ids):
            found["completion_token_ids"] = ids
        found.setdefault("extra", {})["completion_tokens_text"] = [
            t.token for t in reply.logprobs]
    return found


def _note_name(note: Note) -> str:
    return note.value if isinstance(note, Nudge) else type(note).__name__.lower()


def _note_extra(message: Message) -> dict[str, Any]:
    """What a system step is to the loop: its note's kind and fields, how the run ended."""
    note = message.note
    extra: dict[str, Any] = {"note": _note_name(note) if note is not None else "system"}
    if is_dataclass(note):
        extra.update({item.name: _plain(getattr(note, item.name)) for item in fields(note)})
    if message.ending is not None:
        extra["ending"] = message.ending.value
    if message.tool is not None:
        extra["tool"] = message.tool
    return extra


def _plain(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _totals(steps: list[dict[str, Any]]) -> dict[str, Any]:
    metrics = [step["metrics"] for step in steps if "metrics" in step]
    found: dict[str, Any] = {"total_steps": len(steps)}
    for total, key in (("total_prompt_tokens", "prompt_tokens"),
                       ("total_completion_tokens", "completion_tokens"),
                       ("total_cached_tokens", "cached_tokens")):
        found[total] = sum(m.get(key, 0) for m in metrics)
    if metrics and all("cost_usd" in m for m in metrics):
        found["total_cost_usd"] = float(sum(Decimal(str(m["cost_usd"])) for m in metrics))
    return found
