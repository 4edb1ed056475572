"""Limits on a run's spend, checked before each request is sent (never after)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from ..message import Usage
from .prices import Pricing


@dataclass(frozen=True, slots=True)
class Limits:
    """A run's limits (None: none of that kind): USD, tokens (input and output, cached
    input included), and wall-clock seconds."""

    usd: float | None = None
    tokens: int | None = None
    time: float | None = None

    def __bool__(self) -> bool:
        return any(limit is not None for limit in (self.usd, self.tokens, self.time))


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a request was not sent: the limit's kind, what was spent and what the limit is."""

    kind: str
    """``budget-usd``, ``budget-tokens`` or ``time-limit``."""
    spent: str
    limit: str
    needed: str

    def __str__(self) -> str:
        what = {"budget-usd": "USD budget", "budget-tokens": "token budget",
                "time-limit": "time limit"}[self.kind]
        return (f"Stopped by the {what}: spent {self.spent} of {self.limit}; the next request "
                f"could take {self.needed}.")


@dataclass(slots=True)
class Spend:
    """What a run spent so far, every request counted (failed ones too), and whether any
    count is an estimate."""

    pricing: Pricing
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic
    started: float = 0.0
    tokens: int = 0
    usd: Decimal = Decimal(0)
    estimated: bool = False

    def __post_init__(self) -> None:
        self.started = self.clock()

    def elapsed(self) -> float:
        return self.clock() - self.started

    @property
    def deadline(self) -> float | None:
        """When the time limit passes, on :attr:`clock` (None: no time limit)."""
        return None if self.limits.time is None else self.started + self.limits.time

    def refusal(self, input_tokens: int, max_output: int) -> Refusal | None:
        """Why a request of ``input_tokens`` that may answer with ``max_output`` tokens must
        not be sent, or None when its worst case fits every limit."""
        limits = self.limits
        if limits.time is not None and self.elapsed() >= limits.time:
            return Refusal("time-limit", f"{self.elapsed():.1f} s", f"{limits.time:g} s",
                           "more time")
        refusal = self._budget_refusal(input_tokens, max_output)
        if refusal is not None and self.estimated:
            return Refusal(refusal.kind, f"{refusal.spent} (some counts estimated, high)",
                           refusal.limit, refusal.needed)
        return refusal

    def _budget_refusal(self, input_tokens: int, max_output: int) -> Refusal | None:
        limits = self.limits
        worst = input_tokens + max_output
        if limits.tokens is not None and self.tokens + worst > limits.tokens:
            return Refusal("budget-tokens", f"{self.tokens:,} tokens",
                           f"{limits.tokens:,} tokens", f"{worst:,} tokens")
        if limits.usd is not None:
            cost = self.pricing.cost(Usage(input_tokens, max_output))
            if cost is None or self.usd + cost > Decimal(str(limits.usd)):
                return Refusal("budget-usd", f"${self.usd:.4f}", f"${limits.usd:g}",
                               f"${cost:.4f}" if cost is not None else "an unknown amount")
        return None

    def add(self, usage: Usage, *, estimated: bool = False) -> Decimal | None:
        """Count one request's tokens (whatever became of it); its cost, if known."""
        self.tokens += usage.all_input + usage.output_tokens
        cost = self.pricing.cost(usage)
        if cost is not None:
            self.usd += cost
        self.estimated = self.estimated or estimated
        return cost
