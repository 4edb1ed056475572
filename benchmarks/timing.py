"""Small timing helpers: best-of-N wall time, so noisy machines report their quiet runs."""

from __future__ import annotations

import time
from collections.abc import Callable


def best_seconds(fn: Callable[[], object], *, min_total: float = 0.2, max_runs: int = 50,
                 slow: float = 3.0) -> float:
    """The fastest of several runs of ``fn``; runs until ``min_total`` seconds have passed
    (at least three runs, or one when a run takes longer than ``slow`` seconds)."""
    best = float("inf")
    spent = 0.0
    runs = 0
    while runs < 3 or (spent < min_total and runs < max_runs):
        start = time.perf_counter()
        fn()
        elapsed = time.perf_counter() - start
        best = min(best, elapsed)
        spent += elapsed
        runs += 1
        if elapsed > slow:
            break
    return best


def mb_per_s(size: int, seconds: float) -> float:
    return size / seconds / 1e6
