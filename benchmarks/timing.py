"""Timing that a sceptic can check: cases timed in turn, the same number of runs each.

Every case in a comparison runs once untimed (the warm-up, which also tells how long a run
takes), then all cases run in rounds, one run of each per round, so that drift on a busy
machine hits them alike. Each gets the median and the fastest of the same number of runs;
nothing is extrapolated: every figure is a run that happened.

The collector stays on, so a run pays for the collections its own allocations cause. What
the process held before a comparison (modules, inputs, earlier results) is collected and
then frozen out of the collector (``gc.freeze``, undone after), once per comparison and
untimed: a full collection then walks only what the runs made, as in a process that holds
little else, instead of costing whatever the benchmark process has piled up (gptme's
modules, say).
"""

from __future__ import annotations

import gc
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Timing:
    """Seconds: the median and the fastest of ``runs`` timed runs."""

    median: float
    min: float
    runs: int


def compare(cases: dict[str, Callable[[], object]], *, budget: float = 1.0, min_runs: int = 3,
            max_runs: int = 15) -> dict[str, Timing]:
    """Time ``cases`` against each other: a warm-up run of each, then as many rounds as fit
    in about ``budget`` seconds (at least ``min_runs``, at most ``max_runs``)."""
    gc.collect()
    gc.freeze()
    try:
        return _compare(cases, budget, min_runs, max_runs)
    finally:
        gc.unfreeze()


def _compare(cases: dict[str, Callable[[], object]], budget: float, min_runs: int,
             max_runs: int) -> dict[str, Timing]:
    warm = {}
    for name, case in cases.items():
        started = time.perf_counter()
        case()
        warm[name] = time.perf_counter() - started
    per_round = sum(warm.values())
    runs = max(min_runs, min(max_runs, int(budget / per_round) if per_round else max_runs))
    samples: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(runs):
        for name, case in cases.items():
            started = time.perf_counter()
            case()
            samples[name].append(time.perf_counter() - started)
    return {name: Timing(statistics.median(times), min(times), runs)
            for name, times in samples.items()}


def mb_per_s(size: int, seconds: float) -> float:
    return size / seconds / 1e6
