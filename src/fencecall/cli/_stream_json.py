"""``--output-format json`` and ``stream-json``: a run as JSON, for scripts and programs.

``stream-json`` writes one JSON object per line to stdout, flushed as it happens: the run's
``system``/``init``, the model's text (each reply whole, and as deltas with
``--include-partial``), each call as parsed and each of its results, the feedback on what
could not run, usage and cost per request, compactions, background jobs, limits, retries,
and a final ``result`` whose names are Claude Code's where the meaning is the same. ``json``
writes only the ``result``. Nothing else reaches stdout: notes and warnings go to stderr,
as JSON lines too. Every event is described by the JSON Schema shipped beside this module
(:data:`SCHEMA`), which the tests hold the output to.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from .. import __version__
from ..agent import AgentEvent, CallsFound, ReplyDone, ReplyText, Retrying, StepLimit, ToolResult
from ..agent.stats import TOKEN_KINDS, PriceOf, collect
from ..errors import ToolError
from ..execution import Session
from ..message import (
    CannotRun,
    Compacted,
    JobEnded,
    LimitReached,
    Message,
    Nudge,
    Outcome,
    ReplyRecord,
)
from ..parsing import ToolCall
from ..tools import Toolchain
from .visible import json_visible

SCHEMA = Path(__file__).with_name("stream_json.schema.json")
"""The JSON Schema of every line ``--output-format stream-json`` writes."""

_SUBTYPES = {Outcome.DONE: "success", Outcome.STEP_LIMIT: "error_max_turns",
             Outcome.TIME_LIMIT: "error_time_limit", Outcome.GAVE_UP: "error_gave_up",
             Outcome.INTERRUPTED: "error_interrupted", Outcome.ERROR: "error_during_execution"}
_BUDGET_SUBTYPES = {"budget-usd": "error_max_budget_usd",
                    "budget-tokens": "error_max_budget_tokens"}
_CLAUDE_USAGE = {"input_tokens": "input_tokens", "output_tokens": "output_tokens",
                 "cache_read_tokens": "cache_read_input_tokens",
                 "cache_write_tokens": "cache_creation_input_tokens"}
"""fencecall's token kinds by the names Claude Code's usage objects give them."""


def json_line(event: Mapping[str, Any]) -> str:
    """One event as a line: UTF-8 JSON in which nothing a terminal acts on is raw."""
    return json_visible(json.dumps(event, ensure_ascii=False, default=str)) + "\n"


@dataclass(slots=True)
class JsonLines:
    """Where the events go: each one a flushed line on ``out`` (``json``: only the
    ``result``), stamped with the conversation's name once it is known."""

    out: TextIO
    streaming: bool
    session_id: str | None = None

    def write(self, event: dict[str, Any]) -> None:
        if not self.streaming and event["type"] != "result":
            return
        self.out.write(json_line({"type": event.pop("type"), "session_id": self.session_id,
                                  **event}))
        self.out.flush()


def say_json(kind: str) -> Callable[[str], None]:
    """A function that writes a ``{"type": kind, "message": text}`` line on stderr (for the
    notes and warnings a text run prints there)."""

    def say(text: str) -> None:
        sys.stderr.write(json_line({"type": kind, "message": text}))
        sys.stderr.flush()

    return say


def usage_fields(counts: Mapping[str, int]) -> dict[str, int]:
    """Token counts (by :data:`TOKEN_KINDS`) under Claude Code's names."""
    return {_CLAUDE_USAGE[kind]: int(counts.get(kind, 0)) for kind in TOKEN_KINDS}


@dataclass(slots=True)
class _Pending:
    """A call whose results are still to come, and the id the stream gives it."""

    call: ToolCall
    call_id: str


@dataclass(slots=True)
class RunEvents:
    """The agent's events (and the messages it records) as JSON lines. :meth:`attach` tells
    it the run's toolchain and conversation once the agent is built."""

    lines: JsonLines
    prices: PriceOf
    partial: bool = False
    toolchain: Toolchain = field(default_factory=lambda: Toolchain(()))
    _pending: list[_Pending] = field(default_factory=list)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))
    _reply: str = ""
    """The last reply, line ends normalised as the parser read it (calls' spans are in it)."""

    def attach(self, toolchain: Toolchain, session_id: str | None) -> None:
        self.toolchain, self.lines.session_id = toolchain, session_id

    def __call__(self, event: AgentEvent) -> None:
        write = self.lines.write
        if isinstance(event, ReplyText):
            if self.partial:
                write({"type": "text_delta", "text": event.text})
        elif isinstance(event, ReplyDone):
            text = event.message.content
            self._reply = text.replace("\r\n", "\n").replace("\r", "\n")
            write({"type": "assistant", "text": text, "stopped_early": event.stopped_early})
            self._usage(event.message.reply, "reply")
        elif isinstance(event, CallsFound):
            self._pending = [self._call(call) for call in event.calls]
        elif isinstance(event, ToolResult):
            self.message(event.message)
        elif isinstance(event, Retrying):
            write({"type": "retry", "reason": event.reason, "attempt": event.attempt,
                   "attempts": event.attempts, "delay_s": event.delay})
        elif isinstance(event, StepLimit):
            write({"type": "limit", "kind": "max-steps",
                   "text": f"Stopped after {event.steps} steps (the step limit)."})

    def _call(self, call: ToolCall) -> _Pending:
        """Say a call as parsed; it is given an id where its format has none (a code
        block), so its results can name it."""
        pending = _Pending(call, call.call_id or f"call-{next(self._ids)}")
        spec = self.toolchain.for_langtag(call.name) if call.is_codeblock \
            else self.toolchain.get(call.name)
        arguments: Mapping[str, Any] = call.kwargs if not call.is_codeblock else {
            "argline": call.argline, "content": call.content}
        if spec is not None:
            with contextlib.suppress(ToolError):  # the result says why it cannot be bound
                arguments = spec.bind(call.argline, call.content, call.kwargs)
        self.lines.write({
            "type": "tool_call", "call_id": pending.call_id,
            "tool": spec.name if spec is not None else call.name,
            "arguments": dict(arguments), "format": call.format,
            "raw": self._reply[call.start:call.end] if call.end else None,
            "span": [call.start, call.end] if call.end else None})
        return pending

    def message(self, message: Message) -> None:
        """Say a message the agent recorded: a call's result, feedback, a compaction, a
        job's end, a limit, or another note."""
        pending = self._answered(message)
        if pending is not None:
            self._result(message, pending)
        elif isinstance(message.note, CannotRun | Nudge):
            self._feedback(message)
        elif isinstance(message.note, Compacted):
            note = message.note
            self.lines.write({"type": "compaction", "mode": note.mode, "kept": note.kept,
                              "replaced": note.replaced, "text": message.content})
            self._usage(message.reply, "summary")
        elif isinstance(message.note, JobEnded):
            self.lines.write({"type": "job", "event": "ended", "job": message.note.job,
                              "state": message.note.state, "text": message.content})
        elif isinstance(message.note, LimitReached) or message.ending is not None:
            kind = message.note.kind if isinstance(message.note, LimitReached) \
                else str(message.ending)
            self.lines.write({"type": "limit", "kind": kind, "text": message.content})
        else:
            self.lines.write({"type": "notice", "tool": message.tool,
                              "text": message.content})

    def _answered(self, message: Message) -> _Pending | None:
        """The pending call ``message`` is a result of: by its id, or, for a call written
        without one, the first such call still waiting (calls run in order)."""
        if message.call_id is not None:
            return next((p for p in self._pending if p.call_id == message.call_id), None)
        if message.tool is None or isinstance(message.note, CannotRun):
            return None
        return next((p for p in self._pending if p.call.call_id is None), None)

    def _result(self, message: Message, pending: _Pending) -> None:
        record = message.call
        status = record.outcome if record is not None else (
            "ok" if message.status is None else message.status.value)
        self.lines.write({
            "type": "tool_result", "call_id": pending.call_id, "tool": message.tool,
            "status": status, "exit_code": message.exit_code, "output": message.content,
            "final": record is not None,
            "duration_ms": None if record is None else round(record.duration_s * 1000)})
        job = message.metadata.get("job")
        if message.tool == "shell" and isinstance(job, int) and not isinstance(job, bool):
            self.lines.write({"type": "job", "event": "started", "job": job,
                              "state": "running", "text": message.content})
        if record is not None:
            self._pending.remove(pending)

    def _feedback(self, message: Message) -> None:
        note = message.note
        if isinstance(note, Nudge):
            kind, line = note.value, None
        else:
            assert isinstance(note, CannotRun)
            kind = note.malformed or ("unloaded" if note.unloaded else "near-miss")
            line = note.line
        self.lines.write({"type": "feedback", "kind": kind, "line": line,
                          "text": message.content})

    def _usage(self, reply: ReplyRecord | None, request: str) -> None:
        """Usage and cost of one request (a reply, a compaction's summary)."""
        if reply is None or reply.usage is None:
            return
        key = f"{reply.provider}/{reply.model}" if reply.provider else reply.model
        stats = collect([[Message("assistant", "", reply=reply)]], self.prices)
        cost = stats.models[key].cost
        self.lines.write({"type": "usage", "request": request, "model": key,
                          "usage": usage_fields(reply.usage.as_dict()),
                          "counted": reply.counted,
                          "cost_usd": None if cost is None else float(cost)})


def init_event(session: Session, model: str | None, fmt: str, *, yes: bool) -> dict[str, Any]:
    """The ``init`` line: what the run is, before it starts."""
    rules = session.permissions.rules
    return {"type": "system", "subtype": "init", "cwd": str(session.workspace),
            "model": model, "tools": list(session.toolchain.names()), "format": fmt,
            "sandbox": {"policy": str(session.sandbox.policy),
                        "network": session.sandbox.network},
            "confirm": "yes" if yes else "declined",
            "permissions": {"allow": [str(rule) for rule in rules.allow],
                            "deny": [str(rule) for rule in rules.deny]},
            "version": __version__}


def result_event(outcome: Outcome, messages: Sequence[Message], started: float,
                 prices: PriceOf, *, answer: str | None = None) -> dict[str, Any]:
    """The final ``result`` of a run whose ``messages`` (from the prompt on) ended in
    ``outcome``, its usage and cost counted as ``fencecall stats`` counts the log's."""
    stats = collect([messages], prices)
    totals = dict.fromkeys(TOKEN_KINDS, 0)
    for model in stats.models.values():
        for kind in TOKEN_KINDS:
            totals[kind] += model.tokens[kind]
    subtype = _SUBTYPES.get(outcome, "error_during_execution")
    if outcome is Outcome.BUDGET:
        kinds = [m.note.kind for m in messages if isinstance(m.note, LimitReached)]
        subtype = _BUDGET_SUBTYPES.get(kinds[-1] if kinds else "", "error_max_budget_usd")
    if answer is None:
        from ..agent.loop import answer_of

        answer = answer_of(messages) or ""
    return {"type": "result", "subtype": subtype, "is_error": outcome is not Outcome.DONE,
            "duration_ms": round((time.monotonic() - started) * 1000),
            "num_turns": sum(m.role == "assistant" for m in messages),
            "total_cost_usd": None if stats.cost is None else float(stats.cost),
            "usage": usage_fields(totals), "result": answer,
            "terminal_reason": str(outcome), "exit_code": outcome.exit_code}


def unbilled_result(subtype: str, text: str, exit_code: int, started: float, *,
                    terminal_reason: str) -> dict[str, Any]:
    """The ``result`` of a run that asked no model (a saved reply's calls) or could not
    start or go on (a usage error, a server that failed): nothing spent, no replies."""
    return {"type": "result", "subtype": subtype, "is_error": exit_code != 0,
            "duration_ms": round((time.monotonic() - started) * 1000), "num_turns": 0,
            "total_cost_usd": 0.0, "usage": usage_fields({}), "result": text,
            "terminal_reason": terminal_reason, "exit_code": exit_code}


def failure_event(subtype: str, text: str, exit_code: int, started: float) -> dict[str, Any]:
    """The ``result`` of a run that could not start or go on: the error is its text."""
    return unbilled_result(subtype, text, exit_code, started,
                           terminal_reason=subtype.removeprefix("error_"))
