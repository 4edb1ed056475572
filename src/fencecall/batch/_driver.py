"""An asyncio job driven from synchronous code, stopped cleanly by Ctrl-C or SIGTERM.

The job (a batch, an evaluation) runs on an event loop in a thread of its own, so it goes
on while the caller handles what it yields (appends a result, draws the progress). The
caller's thread only takes events and, where asked, catches SIGINT and SIGTERM: a signal
sets the job's stop event and never interrupts the caller mid-write, so a results file
holds only whole lines. Once the job has stopped, :class:`BatchInterrupted` says which
signal did it.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import signal
import threading
from collections.abc import AsyncIterator, Callable, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

try:
    import uvloop
except ImportError:  # not built for this platform: the standard loop does the same, slower
    uvloop = None  # type: ignore[assignment]

T = TypeVar("T")

WAKE_UP = 0.2
"""Seconds between the caller's looks for a signal while no event comes."""


class BatchInterrupted(Exception):
    """The batch was stopped by a signal before every task ran; what finished is saved."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum


@dataclass(frozen=True, slots=True)
class _Ended:
    """The job's event loop is done: with the error that ended it, if one did."""

    error: BaseException | None = None


def drive(job: Callable[[asyncio.Event], AsyncIterator[T]], *, grace: float,
          handle_signals: bool = False,
          name: str = "fencecall-batch-loop") -> Generator[T, None, None]:
    """The events of ``job(stop)``, run on a loop in its own thread. Setting ``stop`` asks
    the job to end early; it is set by SIGINT and SIGTERM with ``handle_signals`` (main
    thread only: :class:`BatchInterrupted` is raised once the job has ended), by closing
    this generator, and by an exception in the caller (Ctrl-C without signal handling),
    always before the generator is left. What the job leaves running when it returns is
    cancelled and given ``grace`` seconds."""
    events: queue.SimpleQueue[Any] = queue.SimpleQueue()
    loop = new_loop()
    stop = asyncio.Event()

    async def pump() -> None:
        async for event in job(stop):
            events.put(event)

    def serve() -> None:
        ended = _Ended()
        try:
            loop.run_until_complete(pump())
        except BaseException as err:  # handed to the caller, who raises it
            ended = _Ended(err)
        finally:
            _end_loop(loop, grace)
            events.put(ended)

    def halt() -> None:
        with contextlib.suppress(RuntimeError):  # the loop has ended already
            loop.call_soon_threadsafe(stop.set)

    caught: list[int] = []
    installed: list[tuple[int, Any]] = []
    if handle_signals:
        def on_signal(signum: int, frame: object) -> None:
            caught.append(signum)
            halt()

        for signum in (signal.SIGINT.value, signal.SIGTERM.value):
            installed.append((signum, signal.signal(signum, on_signal)))
    thread = threading.Thread(target=serve, name=name, daemon=True)
    try:
        thread.start()
        while True:
            try:  # in slices, so that a signal's handler runs while nothing comes
                item = events.get(timeout=WAKE_UP)
            except queue.Empty:
                continue
            if isinstance(item, _Ended):
                if item.error is not None:
                    raise item.error
                break
            yield item
    finally:
        halt()
        thread.join()
        for signum, previous in installed:
            signal.signal(signum, previous)
    if caught:
        raise BatchInterrupted(caught[0])


def new_loop() -> asyncio.AbstractEventLoop:
    """A loop for a job of many sessions: uvloop's where it is installed. Its scheduling,
    sockets and hand-offs from worker threads are in C, which took a tenth or more off
    fencecall's CPU per batch task at a hundred sessions at once (docs/benchmarks.md)."""
    return uvloop.new_event_loop() if uvloop is not None else asyncio.new_event_loop()


def _end_loop(loop: asyncio.AbstractEventLoop, grace: float) -> None:
    """Close the job's loop; a task left to end on its own is cancelled again (it no
    longer waits for its worker thread) and given ``grace`` seconds."""
    left = asyncio.all_tasks(loop)
    for task in left:
        task.cancel()
    if left:
        loop.run_until_complete(asyncio.wait(left, timeout=grace))
    loop.run_until_complete(loop.shutdown_asyncgens())
    loop.close()
