"""Limits on a run's spend, checked before each request is sent (never after), and held
with a budget shared with other runs (a batch's :class:`~.ledger.Ledger`) where there is one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal

from ..message import Usage
from .ledger import Account, Hold
from .limits import Limits, Refusal
from .prices import Pricing

LEDGER_WAIT = 0.05
"""Seconds between asking a shared account again while requests in flight hold its rest."""


@dataclass(slots=True)
class Spend:
    """What a run spent so far, every request counted (failed ones too), and whether any
    count is an estimate.

    Each request is reserved (:meth:`reserve`) before it is sent and added (:meth:`add`)
    after, or released (:meth:`release`) when the provider refused it unbilled. With a shared
    ``account`` the reservation also holds the request's worst case there; ``wait`` sleeps
    while requests of other runs hold what is left (a batch's stops the task from there).
    """

    pricing: Pricing
    limits: Limits = field(default_factory=Limits)
    clock: Callable[[], float] = time.monotonic
    started: float = 0.0
    tokens: int = 0
    usd: Decimal = Decimal(0)
    estimated: bool = False
    account: Account | None = None
    wait: Callable[[float], None] = time.sleep
    _hold: Hold | None = None

    def __post_init__(self) -> None:
        self.started = self.clock()
        if self.account is not None and (left := self.account.time_left()) is not None:
            own = self.limits.time
            self.limits = Limits(self.limits.usd, self.limits.tokens,
                                 max(0.0, left if own is None else min(own, left)))

    @property
    def limited(self) -> bool:
        """Whether any limit holds (else a request's size need not be counted)."""
        return bool(self.limits) or self.account is not None

    def elapsed(self) -> float:
        return self.clock() - self.started

    @property
    def deadline(self) -> float | None:
        """When the time limit passes, on :attr:`clock` (None: no time limit)."""
        return None if self.limits.time is None else self.started + self.limits.time

    def over_time(self) -> Refusal | None:
        """The time-limit refusal once the run's time is up, else None."""
        limits = self.limits
        if limits.time is not None and self.elapsed() >= limits.time:
            return Refusal("time-limit", f"{self.elapsed():.1f} s", f"{limits.time:g} s",
                           "more time")
        return None

    def refusal(self, input_tokens: int, max_output: int) -> Refusal | None:
        """Why a request of ``input_tokens`` that may answer with ``max_output`` tokens must
        not be sent by the run's own limits, or None when its worst case fits them."""
        refusal = self.over_time() or self._budget_refusal(input_tokens, max_output)
        if refusal is not None and self.estimated and refusal.kind != "time-limit":
            return Refusal(refusal.kind, f"{refusal.spent} (some counts estimated, high)",
                           refusal.limit, refusal.needed)
        return refusal

    def reserve(self, input_tokens: int, max_output: int) -> Refusal | None:
        """:meth:`refusal`, then the request's worst case held in the shared account
        (waiting while other runs' requests hold its rest); None: send it."""
        while True:
            refused = self.refusal(input_tokens, max_output)
            if refused is not None or self.account is None:
                return refused
            self.release()  # a request asked for again holds its worst case once
            worst = self.pricing.cost(Usage(input_tokens, max_output))
            answer = self.account.reserve(worst, input_tokens + max_output)
            if isinstance(answer, Refusal):
                return answer
            if answer is not None:
                self._hold = answer
                return None
            self.wait(LEDGER_WAIT)

    def release(self) -> None:
        """Give back the held reservation: its request was never billed."""
        if self._hold is not None and self.account is not None:
            self.account.settle(self._hold, Decimal(0), 0)
        self._hold = None

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
        tokens = usage.all_input + usage.output_tokens
        self.tokens += tokens
        cost = self.pricing.cost(usage)
        if cost is not None:
            self.usd += cost
        self.estimated = self.estimated or estimated
        if self._hold is not None and self.account is not None:
            self.account.settle(self._hold, cost, tokens)
        self._hold = None
        return cost
