"""Limits on a run's spend, checked before each request is sent (never after), and held
with a budget shared with other runs (a batch's :class:`~._ledger.Ledger`) where there is one."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from decimal import Decimal

from ..message import Usage
from ._ledger import Account, Hold
from ._limits import Limits, Refusal
from .prices import Pricing

LEDGER_WAIT = 0.05
"""Seconds between asking a shared account again while requests in flight hold its rest."""


@dataclass(slots=True)
class Spend:
    """What a run spent so far, every request counted (failed ones too), and whether any
    count is an estimate.

    Each request is reserved (:meth:`reserve`) before it is sent, its reply cut as it
    streams where the budgets run out (:meth:`output_room`), and added (:meth:`add`) after,
    or released (:meth:`release`) when the provider refused it unbilled. With a shared
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
    _input: int = 0
    """The input tokens of the request reserved last (see :meth:`output_room`)."""

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
        return refusal if refusal is None or refusal.kind == "time-limit" else self._noted(refusal)

    def reserve(self, input_tokens: int, max_output: int) -> Refusal | None:
        """:meth:`refusal`, then the request's worst case held in the shared account
        (waiting while other runs' requests hold its rest); None: send it."""
        self._input = input_tokens
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

    def output_room(self) -> int | None:
        """The most output tokens the budgets leave the request reserved last (None: no
        budget holds): its reply is cut there as it streams, whatever the server makes of
        ``max_tokens``. (The reservation leaves at least ``max_tokens``, by fencecall's
        count of the input; the cut holds the budget by its count of the output.)"""
        rooms = self._rooms()
        return min(rooms.values()) if rooms else None

    def ran_out(self) -> Refusal:
        """Why the run stops once a reply was cut where a budget ran out
        (:meth:`output_room`): the budget that left the least."""
        rooms = self._rooms()
        return self._noted(self._spent_against(min(rooms, key=rooms.__getitem__),
                                               "more than is left"))

    def _rooms(self) -> dict[str, int]:
        """The output tokens each budget leaves the request reserved last, by its kind."""
        limits, rooms = self.limits, {}
        if limits.tokens is not None:
            rooms["budget-tokens"] = limits.tokens - self.tokens - self._input
        if limits.usd is not None:
            per_token = self.pricing.cost(Usage(0, 1))
            held = self.pricing.cost(Usage(self._input, 0))
            if per_token and held is not None:  # free output: the USD budget sets no room
                left = Decimal(str(limits.usd)) - self.usd - held
                rooms["budget-usd"] = int(left / per_token)
        return {kind: max(0, room) for kind, room in rooms.items()}

    def _noted(self, refusal: Refusal) -> Refusal:
        """``refusal``, its spend said to be high where some counts were estimated."""
        if not self.estimated:
            return refusal
        return replace(refusal, spent=f"{refusal.spent} (some counts estimated, high)")

    def _spent_against(self, kind: str, needed: str) -> Refusal:
        """The refusal by the budget of ``kind``: what was spent, of what."""
        if kind == "budget-tokens":
            return Refusal(kind, f"{self.tokens:,} tokens", f"{self.limits.tokens:,} tokens",
                           needed)
        return Refusal(kind, f"${self.usd:.4f}", f"${self.limits.usd:g}", needed)

    def _budget_refusal(self, input_tokens: int, max_output: int) -> Refusal | None:
        limits = self.limits
        worst = input_tokens + max_output
        if limits.tokens is not None and self.tokens + worst > limits.tokens:
            return self._spent_against("budget-tokens", f"{worst:,} tokens")
        if limits.usd is not None:
            cost = self.pricing.cost(Usage(input_tokens, max_output))
            if cost is None or self.usd + cost > Decimal(str(limits.usd)):
                return self._spent_against(
                    "budget-usd", f"${cost:.4f}" if cost is not None else "an unknown amount")
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
