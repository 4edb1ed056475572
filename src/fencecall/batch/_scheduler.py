"""Many tasks at once in one process: coroutines on one asyncio event loop.

A task spends nearly all its time waiting for its model, so each running task is a
coroutine (:meth:`~._runner.TaskRunner.arun`) whose replies are read on the loop, with a
bounded pool of connections per provider; its tools, and whatever else blocks, run in worker
threads. The scheduler keeps up to ``concurrency`` of them running; a task's timeout is an
asyncio timer, which fires the task's :class:`~._runner.Stop` (its processes are killed),
cancels its coroutine and gives it ``grace`` seconds to end. Tasks are started lazily, so a
million-line tasks file costs one :class:`~._tasks.Task` each, not a coroutine each.

A batch with limits of its own (:attr:`~._runner.BatchOptions.budget`) holds them with one
:class:`~fencecall.accounting.Ledger` that every task's requests reserve from; once it is
closed (the cap cannot cover another request, or the time is up) no task starts, and each
task not started gets a result line saying so, with nothing spent.

Stopping (Ctrl-C, SIGTERM, or the consumer closing the generator) starts nothing more,
stops the running tasks, waits for them, and drops their results: those tasks have no line
in the results file and run again when the batch is resumed.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import AsyncGenerator, Callable, Generator, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..accounting import Account, Ledger, Refusal
from ..message import Outcome
from ..providers import GateStats
from ._driver import BatchInterrupted as BatchInterrupted  # the batch's face names it here
from ._driver import drive
from ._results import ResultFile, TaskResult
from ._runner import BatchOptions, Stop, TaskRunner
from ._tasks import Task, check_unique


@dataclass(frozen=True, slots=True)
class TaskStarted:
    """A task began (its worker is running)."""

    id: str


BatchEvent = TaskStarted | TaskResult | GateStats
"""A task began, a task ended, or the model requests now (in flight, waiting, retried so
far: every provider's gate together, said every :data:`REQUESTS_EVERY` seconds while it
changes, and at the end)."""

REQUESTS_EVERY = 1.0
"""Seconds between looks at the providers' gates (for :data:`BatchEvent`)."""


class _Work:
    """One running task: its coroutine, its stop switch, and its result to come."""

    def __init__(self, task: Task, runner: TaskRunner):
        self.task, self.runner, self.stop = task, runner, Stop()
        self.running: asyncio.Task[TaskResult] = asyncio.ensure_future(self._run())
        self._halted = False

    async def _run(self) -> TaskResult:
        try:
            return await self.runner.arun(self.task, self.stop)
        except Exception as err:  # arun() reports failures itself; this is a last resort
            return TaskResult(self.task.id, Outcome.ERROR, error=f"{type(err).__name__}: {err}",
                              metadata=dict(self.task.metadata))

    def halt(self, reason: str) -> None:
        """Stop the task: its processes are killed and its coroutine is cancelled (once)."""
        self.stop.fire(reason)
        if not self._halted:
            self._halted = True
            self.running.cancel()

    async def result(self, grace: float) -> TaskResult:
        """The task's result; at its timeout, the task is stopped and given ``grace``
        seconds to report how far it got."""
        limit = self.runner.timeout_of(self.task)
        try:
            return await asyncio.wait_for(asyncio.shield(self.running), limit)
        except TimeoutError:
            self.halt("timeout")
        try:
            return await asyncio.wait_for(asyncio.shield(self.running), grace)
        except TimeoutError:
            return TaskResult(
                self.task.id, Outcome.TIMEOUT, metadata=dict(self.task.metadata),
                error=f"ran past its timeout of {limit:g} s, and it did not end within "
                      f"{grace:g} s of being stopped (it was left to end on its own)")


def _not_started(task: Task, closed: Refusal) -> TaskResult:
    """The result of a task the batch's limits kept from starting: nothing spent."""
    status = Outcome.TIME_LIMIT if closed.kind == "time-limit" else Outcome.BUDGET
    return TaskResult(task.id, status, error=f"not started: {closed}",
                      metadata=dict(task.metadata))


async def batch_events(tasks: Iterable[Task], options: BatchOptions, *,
                       stop: asyncio.Event | None = None,
                       account: Account | None = None) -> AsyncGenerator[BatchEvent, None]:
    """Run ``tasks``, up to ``options.concurrency`` at once; yields each start and each
    result as it happens. Setting ``stop`` ends the batch early (see the module);
    ``account`` is the batch's budget (default: a new ledger of ``options.budget``)."""
    if account is None and options.budget:
        account = Ledger(options.budget)
    runner = TaskRunner(options, account)
    if runner.warning:
        warnings.warn(runner.warning, RuntimeWarning, stacklevel=2)
    loop = asyncio.get_running_loop()
    next_report, requests = loop.time() + REQUESTS_EVERY, GateStats(0, 0, 0, 0.0)
    pending = iter(tasks)
    active: dict[asyncio.Future[Any], _Work] = {}
    stopping = asyncio.ensure_future(stop.wait()) if stop is not None else None
    finished: list[TaskResult] = []
    try:
        while stop is None or not stop.is_set():
            started = []  # fill the free slots before handing out results (which the
            while len(active) < max(1, options.concurrency):  # caller may take time over)
                task = next(pending, None)
                if task is None:
                    break
                closed = account.closed() if account is not None else None
                if closed is not None:
                    finished.append(_not_started(task, closed))
                    continue
                work = _Work(task, runner)
                active[asyncio.ensure_future(work.result(options.grace))] = work
                started.append(task.id)
            for task_id in started:
                yield TaskStarted(task_id)
            while finished:
                yield finished.pop(0)
            if not active:
                break
            waiting: set[asyncio.Future[Any]] = set(active)
            if stopping is not None:
                waiting.add(stopping)
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED,
                                         timeout=max(0.0, next_report - loop.time()))
            if loop.time() >= next_report:
                next_report = loop.time() + REQUESTS_EVERY
                if (now := _requests(runner)) != requests:
                    requests = now
                    yield now
            for future in done:
                if future is not stopping:
                    active.pop(future)
                    finished.append(future.result())
        while finished:  # stopped: what did finish still counts
            yield finished.pop(0)
        if (now := _requests(runner)) != requests:  # the end's word, not a stale look's
            yield now
    finally:
        if stopping is not None:
            stopping.cancel()
        await _stop_all(active, options.grace)
        await runner.aclose()


def _requests(runner: TaskRunner) -> GateStats:
    """The model requests now, every provider's gate together."""
    return GateStats.total(gate.stats() for gate in runner.gates())


async def _stop_all(active: dict[asyncio.Future[Any], _Work], grace: float) -> None:
    for waiter, work in active.items():
        work.halt("stopped")
        waiter.cancel()
    running = [work.running for work in active.values() if not work.running.done()]
    if running:
        await asyncio.wait(running, timeout=grace)


def run_events(tasks: Iterable[Task], options: BatchOptions, *,
               handle_signals: bool = False,
               account: Account | None = None) -> Generator[BatchEvent, None, None]:
    """:func:`batch_events` for synchronous code (see :func:`~._driver.drive`): the batch
    goes on while the caller handles an event; with ``handle_signals`` (main thread only),
    SIGINT and SIGTERM stop it cleanly and then raise :class:`BatchInterrupted`; closing
    the generator, or an exception in the caller, stops it too."""
    yield from drive(lambda stop: batch_events(tasks, options, stop=stop, account=account),
                     grace=options.grace, handle_signals=handle_signals)


def run_batch(tasks: Iterable[Task], options: BatchOptions, *,
              out: ResultFile | Path | None = None,
              on_start: Callable[[str], None] | None = None,
              on_requests: Callable[[GateStats], None] | None = None,
              handle_signals: bool = False) -> Generator[TaskResult, None, None]:
    """Run ``tasks`` (ids must be unique) and yield each result as it comes.

    With ``out`` (a results file, or its path), tasks that already have a result there are
    skipped and each new result is appended (fsynced) before it is yielded: rerun with the
    same ``out`` after a kill, and every task ends up there exactly once. ``on_start`` is
    called with each task's id as it starts, ``on_requests`` with the model requests in
    flight and retried (see :data:`BatchEvent`). The batch's budget counts what the results
    already there spent.
    """
    listed = check_unique(tasks)
    file = ResultFile(out) if isinstance(out, Path) else out
    try:
        if file is not None:
            done = file.finished
            listed = [task for task in listed if task.id not in done]
        account = ledger(options, file)
        for event in run_events(listed, options, handle_signals=handle_signals,
                                account=account):
            if isinstance(event, TaskStarted):
                if on_start is not None:
                    on_start(event.id)
                continue
            if isinstance(event, GateStats):
                if on_requests is not None:
                    on_requests(event)
                continue
            if file is not None:
                file.append(event)
            yield event
    finally:
        if file is not None and isinstance(out, Path):
            file.close()


def ledger(options: BatchOptions, results: ResultFile | None,
           make: Callable[..., Any] = Ledger) -> Any:
    """The batch's ledger (None without batch limits), started at what ``results`` spent;
    ``make`` builds it (default a :class:`Ledger`; a Ray actor's constructor, say)."""
    if not options.budget:
        return None
    usd, tokens = results.spent() if results is not None else (Decimal(0), 0)
    return make(options.budget, spent_usd=usd, spent_tokens=tokens)
