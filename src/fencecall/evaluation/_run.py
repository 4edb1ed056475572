"""An evaluation: every trial of every task, many at once, each result appended to the
results file as it ends.

Trials are coroutines on one event loop, up to ``concurrency`` at once; what blocks (the
container CLI, the oracle's script, the verifier) runs in worker threads and a model's
replies are read on the loop, as in a batch. Images are built at most ``max_builds`` at a
time, once per task (:class:`~._images.ImageCache`). The results file is a batch's
(:class:`~fencecall.batch.ResultFile`): the trials already there are skipped, so a rerun
with the same file picks up where a killed one stopped, or one stopped by Ctrl-C or
SIGTERM: then every container goes and only the trials that ended have their lines.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..agent.offload import in_thread
from ..batch import ResultFile
from ..batch._driver import drive
from ..defaults import BUILDS_AT_ONCE, TRIALS_AT_ONCE
from ..environments import ContainerCli, choose_container_cli
from ._images import ImageCache
from ._model_agent import ModelAgents
from ._results import TrialResult, trial_id
from ._trial import Trials

STOP_GRACE = 30.0
"""Seconds the stopped trials have to end once their containers are being removed."""


@dataclass(frozen=True, slots=True)
class EvalOptions:
    """How an evaluation runs. ``folder`` holds the trials' files and the build logs;
    ``trials`` is each task's number of trials (``-k``); ``models`` runs a model as the
    agent (None: the oracle, each task's ``solution/solve.sh``)."""

    folder: Path
    trials: int = 1
    concurrency: int = TRIALS_AT_ONCE
    max_builds: int = BUILDS_AT_ONCE
    models: ModelAgents | None = None
    cli: ContainerCli | None = None
    """The container CLI (None: podman or docker, whichever answers)."""
    environ: Mapping[str, str] | None = None
    """Where the tasks' ``${VAR}`` are read (None: this process's environment)."""
    run: str = field(default_factory=lambda: os.urandom(8).hex())
    """This evaluation, to its processes (the shards on Ray get these options): a build that
    failed in it is not tried again by another of them."""


def planned(tasks: Sequence[Path], trials: int, finished: frozenset[str]) -> list[tuple[Path, int]]:
    """The trials to run: each task's ``trials``, those in ``finished`` left out."""
    return [(task, index) for task in tasks for index in range(trials)
            if trial_id(task.name, index) not in finished]


async def evaluate(plan: Sequence[tuple[Path, int]], options: EvalOptions, *,
                   stop: asyncio.Event | None = None) -> AsyncIterator[TrialResult]:
    """Run the ``plan``'s trials; yields each result as its trial ends. Setting ``stop``
    (or closing the generator) ends the evaluation: the trials under way are stopped,
    their containers removed, and they yield nothing (they run again on resume)."""
    cli = options.cli if options.cli is not None else await in_thread(choose_container_cli)
    images = ImageCache(cli, options.folder / "builds", options.max_builds, options.run)
    trials = Trials(cli, images, options.folder, options.models, options.environ)
    slots = asyncio.Semaphore(max(1, options.concurrency))

    async def one(task: Path, index: int) -> TrialResult:
        async with slots:
            return await trials.run(task, index)

    running = [asyncio.ensure_future(one(task, index)) for task, index in plan]
    stopping: asyncio.Future[Any] = asyncio.ensure_future((stop or asyncio.Event()).wait())
    try:
        waiting: set[asyncio.Future[Any]] = set(running)
        while waiting and not stopping.done():
            done, waiting = await asyncio.wait(waiting | {stopping},
                                               return_when=asyncio.FIRST_COMPLETED)
            waiting.discard(stopping)
            for finished in done:
                if finished is not stopping and not stopping.done():
                    result: TrialResult = finished.result()
                    yield result
    finally:
        stopping.cancel()
        await in_thread(trials.halt)  # first: what the cancelled trials wait for ends
        for future in running:
            future.cancel()
        await asyncio.gather(*running, return_exceptions=True)
        if options.models is not None:
            await options.models.aclose()


def run_eval(tasks: Sequence[Path], options: EvalOptions, out: ResultFile,
             on_result: Callable[[TrialResult], None] = lambda result: None, *,
             handle_signals: bool = False) -> list[TrialResult]:
    """Run each task's trials that ``out`` has no line for, appending each result there
    (fsynced) as it comes; the new results. With ``handle_signals`` (main thread only),
    SIGINT and SIGTERM stop the evaluation cleanly (see :func:`evaluate`), then raise
    :class:`~fencecall.batch.BatchInterrupted`; the results file holds whole lines of the
    trials that ended, and a rerun runs the others."""
    plan = planned(tasks, options.trials, out.finished)
    results: list[TrialResult] = []
    if not plan:
        return results
    for result in drive(lambda stop: evaluate(plan, options, stop=stop), grace=STOP_GRACE,
                        handle_signals=handle_signals, name="fencecall-eval-loop"):
        out.append(result.record())
        results.append(result)
        on_result(result)
    return results
