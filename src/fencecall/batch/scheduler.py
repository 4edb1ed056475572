"""Many tasks at once in one process: an asyncio scheduler over worker threads.

The agent loop is synchronous (a blocking model stream, blocking tool processes), and it
spends nearly all its time waiting, so the scheduler keeps up to ``concurrency`` tasks
running, each in a daemon thread of its own, and waits on them with asyncio: a task's
timeout is an asyncio timer, which fires the task's :class:`~.runner.Stop` and gives its
worker ``grace`` seconds to end. Tasks are started lazily, so a million-line tasks file
costs one :class:`~.tasks.Task` each, not a thread or a coroutine each.

A batch with limits of its own (:attr:`~.runner.BatchOptions.budget`) holds them with one
:class:`~fencecall.accounting.Ledger` that every task's requests reserve from; once it is
closed (the cap cannot cover another request, or the time is up) no task starts, and each
task not started gets a result line saying so, with nothing spent.

Stopping (Ctrl-C, SIGTERM, or the consumer closing the generator) starts nothing more,
stops the running tasks, waits for their workers, and drops their results: those tasks have
no line in the results file and run again when the batch is resumed.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import threading
import warnings
from collections.abc import AsyncGenerator, Callable, Generator, Iterable
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..accounting import Account, Ledger, Refusal
from ..message import Outcome
from .results import ResultFile, TaskResult
from .runner import BatchOptions, Runner, Stop
from .tasks import Task, check_unique


@dataclass(frozen=True, slots=True)
class TaskStarted:
    """A task began (its worker is running)."""

    id: str


BatchEvent = TaskStarted | TaskResult


class BatchInterrupted(Exception):
    """The batch was stopped by a signal before every task ran; what finished is saved."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


class _Work:
    """One running task: its worker thread, its stop switch, and its result to come."""

    def __init__(self, task: Task, runner: Runner, loop: asyncio.AbstractEventLoop):
        self.task, self.runner, self.stop = task, runner, Stop()
        self.future: asyncio.Future[TaskResult] = loop.create_future()
        self._loop = loop
        threading.Thread(target=self._work, name=f"fencecall-batch-{task.id[:40]}",
                         daemon=True).start()

    def _work(self) -> None:
        try:
            result = self.runner.run(self.task, self.stop)
        except BaseException as err:  # run() reports failures itself; this is a last resort
            result = TaskResult(self.task.id, Outcome.ERROR, error=f"{type(err).__name__}: {err}",
                                metadata=dict(self.task.metadata))
        with contextlib.suppress(RuntimeError):  # the loop is closed: the batch is over
            self._loop.call_soon_threadsafe(_settle, self.future, result)

    async def result(self, grace: float) -> TaskResult:
        """The task's result; at its timeout, the worker is stopped and given ``grace``
        seconds to report how far it got."""
        limit = self.runner.timeout_of(self.task)
        try:
            return await asyncio.wait_for(asyncio.shield(self.future), limit)
        except TimeoutError:
            self.stop.fire("timeout")
        try:
            return await asyncio.wait_for(asyncio.shield(self.future), grace)
        except TimeoutError:
            return TaskResult(
                self.task.id, Outcome.TIMEOUT, metadata=dict(self.task.metadata),
                error=f"ran past its timeout of {limit:g} s, and its worker did not end "
                      f"within {grace:g} s of being stopped (it was left to end on its own)")


def _not_started(task: Task, closed: Refusal) -> TaskResult:
    """The result of a task the batch's limits kept from starting: nothing spent."""
    status = Outcome.TIME_LIMIT if closed.kind == "time-limit" else Outcome.BUDGET
    return TaskResult(task.id, status, error=f"not started: {closed}",
                      metadata=dict(task.metadata))


def _settle(future: asyncio.Future[TaskResult], result: TaskResult) -> None:
    if not future.done():
        future.set_result(result)


async def batch_events(tasks: Iterable[Task], options: BatchOptions, *,
                       stop: asyncio.Event | None = None,
                       account: Account | None = None) -> AsyncGenerator[BatchEvent, None]:
    """Run ``tasks``, up to ``options.concurrency`` at once; yields each start and each
    result as it happens. Setting ``stop`` ends the batch early (see the module);
    ``account`` is the batch's budget (default: a new ledger of ``options.budget``)."""
    if account is None and options.budget:
        account = Ledger(options.budget)
    runner = Runner(options, account)
    if runner.warning:
        warnings.warn(runner.warning, RuntimeWarning, stacklevel=2)
    loop = asyncio.get_running_loop()
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
                work = _Work(task, runner, loop)
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
            done, _ = await asyncio.wait(waiting, return_when=asyncio.FIRST_COMPLETED)
            for future in done:
                if future is not stopping:
                    active.pop(future)
                    finished.append(future.result())
        while finished:  # stopped: what did finish still counts
            yield finished.pop(0)
    finally:
        if stopping is not None:
            stopping.cancel()
        await _stop_all(active, options.grace)
        runner.close()


async def _stop_all(active: dict[asyncio.Future[Any], _Work], grace: float) -> None:
    for waiter, work in active.items():
        work.stop.fire("stopped")
        waiter.cancel()
    workers = [work.future for work in active.values() if not work.future.done()]
    if workers:
        await asyncio.wait(workers, timeout=grace)


def run_events(tasks: Iterable[Task], options: BatchOptions, *,
               handle_signals: bool = False,
               account: Account | None = None) -> Generator[BatchEvent, None, None]:
    """:func:`batch_events` for synchronous code, on an event loop of its own. With
    ``handle_signals`` (main thread only), SIGINT and SIGTERM stop the batch cleanly and
    then raise :class:`BatchInterrupted`."""
    loop = asyncio.new_event_loop()
    stop = asyncio.Event()
    caught: list[int] = []
    installed: list[tuple[int, Any]] = []

    def on_signal(signum: int) -> None:
        caught.append(signum)
        stop.set()

    if handle_signals:
        for signum in (signal.SIGINT.value, signal.SIGTERM.value):
            installed.append((signum, signal.getsignal(signum)))
            loop.add_signal_handler(signum, on_signal, signum)
    events = batch_events(tasks, options, stop=stop, account=account)

    async def step() -> BatchEvent | None:
        with contextlib.suppress(StopAsyncIteration):
            return await anext(events)
        return None

    try:
        while True:
            waiter = loop.create_task(step())
            try:
                event = loop.run_until_complete(waiter)
            except BaseException:  # Ctrl-C without signal handling: stop what runs
                waiter.cancel()
                with contextlib.suppress(BaseException):
                    loop.run_until_complete(waiter)
                raise
            if event is None:
                break
            yield event
    finally:
        try:
            loop.run_until_complete(events.aclose())
        finally:
            for signum, previous in installed:
                loop.remove_signal_handler(signum)
                if previous is not None:
                    signal.signal(signum, previous)
            loop.close()
    if caught:
        raise BatchInterrupted(caught[0])


def run_batch(tasks: Iterable[Task], options: BatchOptions, *,
              out: ResultFile | Path | None = None,
              on_start: Callable[[str], None] | None = None,
              handle_signals: bool = False) -> Generator[TaskResult, None, None]:
    """Run ``tasks`` (ids must be unique) and yield each result as it comes.

    With ``out`` (a results file, or its path), tasks that already have a result there are
    skipped and each new result is appended (fsynced) before it is yielded: rerun with the
    same ``out`` after a kill, and every task ends up there exactly once. ``on_start`` is
    called with each task's id as it starts. The batch's budget counts what the results
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
