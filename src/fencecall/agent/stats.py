"""Usage and cost from conversation logs: which tools are slow or fail, what a model cost.

Everything comes from what the log already holds: each call's last result carries its
duration and outcome, each assistant message its model and token usage (reported, or counted
by fencecall). Prices come from the configuration, else ``genai-prices``; a model neither
knows (a local one without a configured price, say) costs "unknown", never 0.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from ..accounting import Price, Pricing
from ..message import CallRecord, JobEnded, Message, ReplyRecord, Status

DENIED = frozenset({Status.BLOCKED, Status.DECLINED})
FAILED = frozenset({Status.ERROR, Status.INTERRUPTED})
TOKEN_KINDS = ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")


@dataclass(slots=True)
class ToolStats:
    """One tool's calls: how many, how many failed (an error, an interruption, or a command
    that exited non-zero) or were denied, and how long they took (the tool's time, not the
    time a confirmation waited for its answer)."""

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
    The provider reports no usage for a reply stopped at its first call: fencecall counts it,
    ``counted`` with the model's tokenizer, ``estimated`` where it has none. ``unmetered``
    replies have no count at all (logs of release 0.1)."""

    provider: str
    url: str | None
    replies: int = 0
    counted: int = 0
    estimated: int = 0
    unmetered: int = 0
    tokens: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TOKEN_KINDS, 0))
    cost: Decimal | None = Decimal(0)


@dataclass(slots=True)
class JobStats:
    """Background jobs: how many started, and how they ended as far as the model heard (the
    others ran until their conversation or its time limit ended)."""

    started: int = 0
    ended: int = 0
    """Ended by themselves."""
    killed: int = 0
    """Ended by the model, or stopped for writing too much."""

    @property
    def stopped(self) -> int:
        return self.started - self.ended - self.killed


@dataclass(slots=True)
class Stats:
    tools: dict[str, ToolStats] = field(default_factory=dict)
    models: dict[str, ModelStats] = field(default_factory=dict)
    jobs: JobStats = field(default_factory=JobStats)

    @property
    def cost(self) -> Decimal | None:
        total = Decimal(0)
        for model in self.models.values():
            if model.cost is None:
                return None
            total += model.cost
        return total


PriceOf = Callable[[str], Price | None]
"""The configured price of ``provider/model``, if any."""


def collect(conversations: Iterable[Sequence[Message]],
            prices: PriceOf = lambda model: None) -> Stats:
    """The stats of the messages of one or more conversations, priced by ``prices`` where
    it knows the model and by ``genai-prices`` elsewhere."""
    stats = Stats()
    for messages in conversations:
        started: set[int] = set()
        fates: dict[int, str] = {}
        for message in messages:
            if message.reply is not None and message.reply.model:
                _count_reply(stats, message.reply, prices)
            elif message.call is not None:
                _count_call(stats, message.call)
            _follow_jobs(message, started, fates)
        stats.jobs.started += len(started)
        stats.jobs.ended += sum(fates.get(job) == "ended" for job in started)
        stats.jobs.killed += sum(fates.get(job) in ("killed", "overflowed") for job in started)
    return stats


def jobs_left_running(messages: Iterable[Message]) -> list[int]:
    """The jobs a log shows started and never heard to end. In a conversation resumed by
    another run none of them runs: they were stopped when the earlier run ended."""
    started: set[int] = set()
    fates: dict[int, str] = {}
    for message in messages:
        _follow_jobs(message, started, fates)
    return sorted(job for job in started if fates.get(job, "running") == "running")


def _follow_jobs(message: Message, started: set[int], fates: dict[int, str]) -> None:
    """Note a job the message started (a shell result's ``job``) or the end it reports (a
    jobs result's or an end notice's ``job_state``)."""
    if isinstance(message.note, JobEnded):
        fates[message.note.job] = message.note.state
        return
    metadata = message.metadata
    job = metadata.get("job")
    if not isinstance(job, int) or isinstance(job, bool):
        return
    state = metadata.get("job_state")
    if message.tool == "shell":
        started.add(job)
    elif isinstance(state, str) and state != "running":
        fates[job] = state


def _count_call(stats: Stats, call: CallRecord) -> None:
    entry = stats.tools.setdefault(call.tool, ToolStats())
    entry.calls += 1
    entry.failures += call.status in FAILED or (call.status is None and bool(call.exit_code))
    entry.denials += call.status in DENIED
    if call.status not in DENIED:
        entry.durations.append(call.duration_s)


def _count_reply(stats: Stats, reply: ReplyRecord, prices: PriceOf) -> None:
    provider = reply.provider
    key = f"{provider}/{reply.model}" if provider else reply.model
    entry = stats.models.setdefault(key, ModelStats(provider, reply.provider_url))
    entry.replies += 1
    usage = reply.usage
    if usage is None:  # a log of release 0.1: replies cut at a call had no count
        entry.unmetered += 1
        entry.cost = None
        return
    entry.counted += reply.counted == "tokenizer"
    entry.estimated += reply.counted == "estimate"
    counts = usage.as_dict()
    for kind in TOKEN_KINDS:
        entry.tokens[kind] += counts[kind]
    price = Pricing(reply.model, provider, entry.url, prices(key)).cost(usage)
    entry.cost = None if price is None or entry.cost is None else entry.cost + price
