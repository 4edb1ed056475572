"""An evaluation on a Ray cluster (``fencecall eval --ray``; ``pip install 'fencecall[ray]'``).

The trials are cut into shards; each shard is one Ray task that runs the asyncio
:func:`~._run.evaluate` over its trials, choosing its own container CLI on its worker's
machine, and streams each result back as it ends. Images are built where the trials run,
each at most once per machine and at most ``max_builds`` at once there, whichever workers
ask (:class:`~._images.ImageCache` locks). This process, the driver, is the only writer of
the results file and writes each trial at most once, so a shard that Ray runs again, or an
evaluation stopped and rerun, still leaves every trial exactly once. The pieces are the
batch's Ray backend's (:mod:`fencecall.batch.ray_backend`).

The task folders and the evaluation's folder must be at the same paths on the workers:
the same machine, or a shared file system.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Sequence
from pathlib import Path
from typing import Any

from ..batch import ResultFile
from ..batch._driver import drive
from ..batch.ray_backend import cancel_shards, connect, ray_module, stop_signals, streamed
from ._results import TrialResult
from ._run import STOP_GRACE, EvalOptions, evaluate, planned


def shard_results(plan: list[tuple[Path, int]], options: EvalOptions
                  ) -> Generator[dict[str, Any], None, None]:
    """What runs on a Ray worker: one shard's trials, each result as its record. Ray's
    cancel (Ctrl-C in the worker) stops them as a signal stops ``fencecall eval``."""
    for result in drive(lambda stop: evaluate(plan, options, stop=stop), grace=STOP_GRACE,
                        name="fencecall-eval-shard"):
        yield result.record()


def run_eval_ray(tasks: Sequence[Path], options: EvalOptions, out: ResultFile,
                 on_result: Callable[[TrialResult], None] = lambda result: None, *,
                 address: str | None = None, shard_size: int | None = None,
                 on_note: Callable[[str], None] | None = None) -> list[TrialResult]:
    """:func:`~._run.run_eval` on Ray at ``address`` (None: the running instance,
    ``RAY_ADDRESS``, or a new local one): the same skipping of finished trials, the same
    appending of each result. ``shard_size`` trials a shard (default: the concurrency, so
    one shard keeps a worker's slots busy). A shard that fails for good is said through
    ``on_note``; its unfinished trials have no line and run on the next run. Ctrl-C or
    SIGTERM here cancels the shards and waits for them to remove their containers."""
    plan = planned(tasks, options.trials, out.finished)
    if not plan:
        return []
    ray = ray_module()
    connect(ray, address)
    size = shard_size or max(1, options.concurrency)
    remote = ray.remote(shard_results).options(num_returns="streaming", num_cpus=1,
                                               max_retries=3)
    running = [remote.remote(plan[at : at + size], options) for at in range(0, len(plan), size)]

    def failed(why: str) -> None:
        if on_note is not None:
            on_note(f"a shard failed ({why}); its unfinished trials have no line and run "
                    "when the evaluation is run again")

    results: list[TrialResult] = []
    with stop_signals():
        try:
            for _, record in streamed(ray, running, failed):
                if record is None or record["id"] in out.records:  # ended; or a shard rerun
                    continue
                result = TrialResult.from_record(record)
                out.append(result.record())
                results.append(result)
                on_result(result)
        except BaseException:
            cancel_shards(ray, running, STOP_GRACE)
            raise
    return results
