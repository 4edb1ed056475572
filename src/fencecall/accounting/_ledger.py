"""One account shared by many runs (a batch's tasks): every request reserves its worst case
before it is sent and settles what it cost after, so runs going at once can never spend
past the cap together.

A reservation that fits the cap only once others settle waits (:meth:`Ledger.reserve`
answers None); one that would not fit even with nothing else outstanding is refused, and
from then on the ledger is closed: every later reservation is refused the same way and
:meth:`Ledger.closed` tells a scheduler to start nothing more. The wall-clock limit runs on
``time.time`` (not a monotonic clock), so workers on other machines read the same deadline.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Protocol

from ._limits import Limits, Refusal


@dataclass(frozen=True, slots=True)
class Hold:
    """A reservation: what a request may cost at worst, held until it is settled."""

    number: int
    usd: Decimal
    tokens: int


class Account(Protocol):
    """A shared budget, in this process (:class:`Ledger`) or elsewhere (a Ray actor's)."""

    def reserve(self, usd: Decimal | None, tokens: int) -> Hold | Refusal | None:
        """Hold a request's worst case (``usd`` None: its price is unknown); None: wait,
        it fits once others settle."""
        ...

    def settle(self, hold: Hold, usd: Decimal | None, tokens: int) -> None:
        """What the held request cost (``usd`` None: unknown, the held amount is kept)."""
        ...

    def closed(self) -> Refusal | None:
        """Why no more requests may be sent (the cap was reached, or the time is up)."""
        ...

    def time_left(self) -> float | None:
        """Seconds until the wall-clock limit (None: no limit)."""
        ...

    def spent(self) -> tuple[Decimal, int]:
        """USD and tokens settled so far."""
        ...


class Ledger:
    """The :class:`Account` of one process; thread-safe. ``spent_usd`` and ``spent_tokens``
    start it where an earlier run of the same batch left off."""

    def __init__(self, limits: Limits, *, spent_usd: Decimal = Decimal(0),
                 spent_tokens: int = 0, clock: Callable[[], float] = time.time):
        self.limits = limits
        self._clock = clock
        self._deadline = None if limits.time is None else clock() + limits.time
        self._lock = threading.Lock()
        self._usd = spent_usd
        self._tokens = spent_tokens
        self._holds: dict[int, Hold] = {}
        self._numbers = itertools.count(1)
        self._closed: Refusal | None = None

    def reserve(self, usd: Decimal | None, tokens: int) -> Hold | Refusal | None:
        with self._lock:
            refused = self._closed or self._over_time()
            if refused is None:
                refused = self._refusal(usd, tokens, self._usd, self._tokens)
            if refused is not None:
                self._closed = refused
                return refused
            held_usd = sum((hold.usd for hold in self._holds.values()), Decimal(0))
            held_tokens = sum(hold.tokens for hold in self._holds.values())
            if self._refusal(usd, tokens, self._usd + held_usd, self._tokens + held_tokens):
                return None  # fits once the requests in flight settle
            hold = Hold(next(self._numbers), usd or Decimal(0), tokens)
            self._holds[hold.number] = hold
            return hold

    def settle(self, hold: Hold, usd: Decimal | None, tokens: int) -> None:
        with self._lock:
            if self._holds.pop(hold.number, None) is None:
                return  # settled already
            self._usd += hold.usd if usd is None else usd
            self._tokens += tokens

    def closed(self) -> Refusal | None:
        with self._lock:
            if self._closed is None:
                self._closed = self._over_time()
            return self._closed

    def time_left(self) -> float | None:
        return None if self._deadline is None else self._deadline - self._clock()

    def spent(self) -> tuple[Decimal, int]:
        with self._lock:
            return self._usd, self._tokens

    def _over_time(self) -> Refusal | None:
        if self._deadline is None or self._clock() < self._deadline:
            return None
        assert self.limits.time is not None
        return Refusal("time-limit", f"{self.limits.time:g} s", f"{self.limits.time:g} s",
                       "more time", scope="batch")

    def _refusal(self, usd: Decimal | None, tokens: int, spent_usd: Decimal,
                 spent_tokens: int) -> Refusal | None:
        limits = self.limits
        if limits.tokens is not None and spent_tokens + tokens > limits.tokens:
            return Refusal("budget-tokens", f"{spent_tokens:,} tokens",
                           f"{limits.tokens:,} tokens", f"{tokens:,} tokens", scope="batch")
        if limits.usd is not None and (usd is None
                                       or spent_usd + usd > Decimal(str(limits.usd))):
            return Refusal("budget-usd", f"${spent_usd:.4f}", f"${limits.usd:g}",
                           "an unknown amount" if usd is None else f"${usd:.4f}",
                           scope="batch")
        return None
