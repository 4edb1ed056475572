"""What the readable exports (markdown, HTML) say of a turn, written once for both."""

from __future__ import annotations

import json
from decimal import Decimal

from ..accounting import Pricing
from ..message import Message, ReplyRecord
from ._atif import PriceOf
from ._turns import Action, Turn

TITLES = {"user": "User", "agent": "Assistant", "system": "Note"}


def heading(turn: Turn) -> str:
    """``Assistant · local/m`` and the like."""
    reply = turn.message.reply
    if turn.kind == "agent" and reply is not None and reply.model:
        return f"Assistant · {reply.provider}/{reply.model}" if reply.provider \
            else f"Assistant · {reply.model}"
    if turn.kind == "system" and turn.message.ending is not None:
        return f"Note · the run ended: {turn.message.ending.value}"
    return TITLES[turn.kind]


def reply_line(reply: ReplyRecord, prices: PriceOf) -> str:
    """``12 in (3 cached), 7 out, $0.0001`` (the cost where it is known)."""
    usage = reply.usage
    if usage is None:
        return "tokens unknown"
    said = f"{usage.all_input} in"
    if usage.cache_read_tokens:
        said += f" ({usage.cache_read_tokens} cached)"
    said += f", {usage.output_tokens} out"
    key = f"{reply.provider}/{reply.model}" if reply.provider else reply.model
    cost = Pricing(reply.model, reply.provider, reply.provider_url, prices(key)).cost(usage)
    said += f", {money(cost)}"
    if reply.logprobs is not None:
        said += f", {len(reply.logprobs)} scored tokens"
    return said


def money(cost: Decimal | None) -> str:
    return "cost unknown" if cost is None else f"${cost:.4f}"


def call_line(action: Action) -> str:
    """``shell (call-2-1): ok, exit 0, 0.012 s``."""
    last = action.results[-1] if action.results else None
    said = f"{action.tool} ({action.call_id})"
    if last is None:
        return f"{said}: no result"
    return f"{said}: {outcome(last)}"


def outcome(result: Message) -> str:
    parts = [result.call.outcome if result.call else
             result.status.value if result.status else "ok"]
    if result.exit_code is not None:
        parts.append(f"exit {result.exit_code}")
    if result.call is not None:
        parts.append(f"{result.call.duration_s:.3f} s")
    return ", ".join(parts)


def arguments(action: Action) -> str:
    return json.dumps(dict(action.arguments), indent=2, ensure_ascii=False, default=str)


def totals(turns: list[Turn], prices: PriceOf) -> str:
    """``3 replies, 36 tokens in, 21 out, cost unknown``."""
    replies = [t.message.reply for t in turns if t.kind == "agent" and t.message.reply]
    used = [r.usage for r in replies if r.usage is not None]
    costs = [Pricing(r.model, r.provider, r.provider_url,
                     prices(f"{r.provider}/{r.model}" if r.provider else r.model)).cost(u)
             for r in replies if (u := r.usage) is not None]
    total = None if any(c is None for c in costs) or len(used) < len(replies) else sum(
        (c for c in costs if c is not None), Decimal(0))
    return (f"{len(replies)} replies, {sum(u.all_input for u in used)} tokens in, "
            f"{sum(u.output_tokens for u in used)} out, {money(total)}")
