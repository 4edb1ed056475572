"""What a run or a batch may spend, and why a request was not sent."""

from __future__ import annotations

from dataclasses import dataclass


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
    scope: str = "run"
    """Whose limit: the run's own, or the ``batch``'s shared by all its tasks."""

    @property
    def what(self) -> str:
        """The limit's name: ``USD budget``, ``token budget`` or ``time limit``."""
        return {"budget-usd": "USD budget", "budget-tokens": "token budget",
                "time-limit": "time limit"}[self.kind]

    def __str__(self) -> str:
        whose = "the batch's" if self.scope == "batch" else "the"
        if self.kind == "time-limit" and self.scope == "batch":
            return f"Stopped by the batch's time limit of {self.limit}."
        return (f"Stopped by {whose} {self.what}: spent {self.spent} of {self.limit}; the "
                f"next request could take {self.needed}.")
