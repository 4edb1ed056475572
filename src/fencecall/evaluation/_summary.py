"""The summary of an evaluation's results: per task and over all, the trials, how many ran
to a reward, the mean reward, pass@k, the errors by kind, and the cost.

The mean reward counts a trial without a reward as 0 (a task whose image never built has
scored nothing). pass@k follows Harbor: a trial passes with its full reward (1), trials
that got no reward are left out, and each task's pass@k is the unbiased estimate from its
n trials with c passes, 1 - C(n-c, k) / C(n, k), averaged over the tasks; k runs over 1,
the powers of two and the fewest trials any task has.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from decimal import Decimal

from ._results import ERROR_KINDS, TrialResult


def pass_at_k(n: int, c: int, k: int) -> float:
    """The chance that at least one of ``k`` trials drawn from ``n`` (``c`` of them passing)
    passes."""
    if n - c < k:
        return 1.0
    return 1.0 - math.comb(n - c, k) / math.comb(n, k)


@dataclass(frozen=True, slots=True)
class Row:
    """One task's line, or the line of all of them (``task`` None)."""

    task: str | None
    trials: int
    ran: int
    mean_reward: float
    pass_at: dict[int, float] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Summary:
    rows: tuple[Row, ...]
    total: Row
    errors: dict[str, int]
    cost_usd: Decimal
    unpriced: int
    """Model trials whose cost is unknown (a model without a price), not in ``cost_usd``."""

    def table(self) -> str:
        """The summary as a person reads it: a line per task, then all of them."""
        ks = sorted(self.total.pass_at)
        head = ["task", "trials", "ran", "mean reward", *(f"pass@{k}" for k in ks)]
        lines = [[row.task or f"all ({len(self.rows)} tasks)", str(row.trials), str(row.ran),
                  f"{row.mean_reward:.3f}", *(_rate(row.pass_at.get(k)) for k in ks)]
                 for row in (*self.rows, self.total)]
        widths = [max(len(line[i]) for line in (head, *lines)) for i in range(len(head))]
        text = ["  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True))
                .rstrip() for line in (head, *lines)]
        errors = ", ".join(f"{kind} {count}" for kind, count in self.errors.items())
        text.append(f"errors: {errors or 'none'}")
        unpriced = f" (and {self.unpriced} trials of a model without a price)" \
            if self.unpriced else ""
        text.append(f"cost: ${self.cost_usd}{unpriced}")
        return "\n".join(text)


def _rate(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def summarize(results: Iterable[TrialResult]) -> Summary:
    """The summary of ``results`` (tasks in the order they first appear)."""
    by_task: dict[str, list[TrialResult]] = {}
    for result in results:
        by_task.setdefault(result.task, []).append(result)
    graded = [[r for r in trials if r.reward is not None] for trials in by_task.values()]
    fewest = min((len(trials) for trials in graded if trials), default=0)
    ks = sorted({1, fewest, *(2 ** i for i in range(1, fewest.bit_length()))}) \
        if fewest else []
    rows = tuple(_row(task, trials, ks) for task, trials in by_task.items())
    everything = [r for trials in by_task.values() for r in trials]
    total = Row(None, len(everything), sum(r.ran for r in everything), _mean(everything),
                {k: sum(row.pass_at[k] for row in rows if k in row.pass_at)
                 / max(1, sum(k in row.pass_at for row in rows)) for k in ks})
    errors = Counter(r.error_kind for r in everything if r.error_kind is not None)
    cost = sum((Decimal(r.cost_usd) for r in everything if r.cost_usd is not None),
               Decimal(0))
    unpriced = sum(1 for r in everything if r.agent == "model" and r.steps
                   and r.cost_usd is None)
    return Summary(rows, total, {kind: errors[kind] for kind in ERROR_KINDS if errors[kind]},
                   cost, unpriced)


def _row(task: str, trials: Sequence[TrialResult], ks: list[int]) -> Row:
    graded = [r for r in trials if r.reward is not None]
    passes = sum(1 for r in graded if r.reward is not None and r.reward >= 1.0)
    return Row(task, len(trials), sum(r.ran for r in trials), _mean(trials),
               {k: pass_at_k(len(graded), passes, k) for k in ks if k <= len(graded)})


def _mean(trials: Sequence[TrialResult]) -> float:
    return sum(r.reward or 0.0 for r in trials) / len(trials) if trials else 0.0
