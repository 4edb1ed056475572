"""Usage and cost from conversation logs: which tools are slow or fail, what a model cost.

Everything comes from what the log already holds: each call's last result carries its
duration and outcome, each assistant message its model and token usage. Prices come from
``genai-prices``; a model it does not know (a local one, say) costs "unknown", never 0.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from ..message import CallRecord, Message, ReplyRecord

DENIED = frozenset({"blocked", "declined"})
FAILED = frozenset({"error", "interrupted"})
TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(slots=True)
class ToolStats:
    """One tool's calls: how many, how many failed or were denied, and how long they took."""

    calls: int = 0
    failures: int = 0
    denials: int = 0
    durations: list[float] = field(default_factory=list)

    def percentile(self, share: float) -> float | None:
        """The duration below which ``share`` of the calls finished (nearest rank)."""
        if not self.durations:
            return None
        ordered = sorted(self.durations)
        return ordered[max(0, math.ceil(share * len(ordered)) - 1)]


@dataclass(slots=True)
class ModelStats:
    """One model's replies and tokens; ``cost`` is None while any reply's price is unknown.
    ``unmetered`` replies came without a token count: a reply stopped at its first call is
    cut before the provider reports usage, though its tokens are billed."""

    provider: str
    url: str | None
    replies: int = 0
    unmetered: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    cost: Decimal | None = Decimal(0)


@dataclass(slots=True)
class Stats:
    tools: dict[str, ToolStats] = field(default_factory=dict)
    models: dict[str, ModelStats] = field(default_factory=dict)

    @property
    def cost(self) -> Decimal | None:
        total = Decimal(0)
        for model in self.models.values():
            if model.cost is None:
                return None
            total += model.cost
        return total


def collect(conversations: Iterable[Sequence[Message]]) -> Stats:
    """The stats of the messages of one or more conversations."""
    stats = Stats()
    for messages in conversations:
        for message in messages:
            if message.reply is not None and message.reply.model:
                _count_reply(stats, message.reply)
            elif message.call is not None:
                _count_call(stats, message.call)
    return stats


def _count_call(stats: Stats, call: CallRecord) -> None:
    entry = stats.tools.setdefault(call.tool, ToolStats())
    entry.calls += 1
    entry.failures += call.outcome in FAILED
    entry.denials += call.outcome in DENIED
    if call.outcome not in DENIED:
        entry.durations.append(call.duration_s)


def _count_reply(stats: Stats, reply: ReplyRecord) -> None:
    provider = reply.provider
    key = f"{provider}/{reply.model}" if provider else reply.model
    entry = stats.models.setdefault(key, ModelStats(provider, reply.provider_url))
    entry.replies += 1
    usage = reply.usage
    if usage is None:
        entry.unmetered += 1
        entry.cost = None  # a reply without usage cannot be priced
        return
    counts = usage.as_dict()
    for kind in TOKEN_KINDS:
        entry.tokens[kind] += counts[kind]
    price = price_of(reply.model, provider, entry.url, counts)
    entry.cost = None if price is None or entry.cost is None else entry.cost + price


def price_of(model: str, provider: str, url: str | None,
             usage: dict[str, int]) -> Decimal | None:
    """What one reply cost in USD, or None when the price library does not know the model."""
    from genai_prices import Usage, calc_price  # imported only when asked: it is large

    tokens = Usage(input_tokens=usage.get("input_tokens", 0) + usage.get("cache_read_tokens", 0)
                   + usage.get("cache_write_tokens", 0),
                   output_tokens=usage.get("output_tokens", 0),
                   cache_read_tokens=usage.get("cache_read_tokens", 0),
                   cache_write_tokens=usage.get("cache_write_tokens", 0))
    try:
        if url and not _is_local(url):
            return Decimal(calc_price(tokens, model, provider_api_url=url).total_price)
        if not url:
            return Decimal(calc_price(tokens, model, provider_id=provider).total_price)
    except (LookupError, ValueError):
        return None
    return None


def _is_local(url: str) -> bool:
    """A model served on this machine has no list price."""
    return any(host in url for host in ("://127.", "://localhost", "://[::1]", "://0.0.0.0"))
