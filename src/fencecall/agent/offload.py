"""Blocking work (a tool process, a file, a shared budget's lock) awaited from a coroutine.

The event loop must never block: it carries every other session's model stream. Such work
runs in a worker thread with the caller's context (so telemetry spans nest as they do in
the synchronous loop). A thread cannot be cancelled, so a cancelled caller waits for the
thread to end before it goes on: what the thread holds (a session, a conversation log) is
never used by two threads at once. Whoever cancels makes the work end (a batch task's stop
kills the processes its tools run).
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

R = TypeVar("R")


async def in_thread(work: Callable[[], R], executor: Executor | None = None) -> R:
    """``work()`` in a thread of ``executor`` (None: the loop's default), awaited."""
    loop = asyncio.get_running_loop()
    context = contextvars.copy_context()
    future = loop.run_in_executor(executor, context.run, work)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if not future.done():
            await asyncio.wait([future])  # cancelled again while waiting: given up on
        raise


class DaemonThreads(Executor):
    """A pool of up to ``max_workers`` threads, started as work needs them and kept for
    more, that never holds the process open at its exit (the standard pool joins its
    threads then): a batch that leaves a task which ignored its stop to end on its own must
    still be able to end."""

    def __init__(self, max_workers: int, name: str = "fencecall-worker"):
        if max_workers < 1:
            raise ValueError("max_workers must be at least 1")
        self._max, self._name = max_workers, name
        self._queue: queue.SimpleQueue[tuple[Future[Any], Callable[[], Any]] | None] = (
            queue.SimpleQueue())
        self._idle = threading.Semaphore(0)
        self._lock = threading.Lock()
        self._threads: list[threading.Thread] = []
        self._shut = False

    def submit(self, fn: Callable[..., R], /, *args: Any, **kwargs: Any) -> Future[R]:
        future: Future[R] = Future()
        with self._lock:
            if self._shut:
                raise RuntimeError("cannot schedule new work after shutdown")
            self._queue.put((future, functools.partial(fn, *args, **kwargs)))
            if not self._idle.acquire(blocking=False) and len(self._threads) < self._max:
                thread = threading.Thread(target=self._serve, daemon=True,
                                          name=f"{self._name}-{len(self._threads)}")
                self._threads.append(thread)
                thread.start()
        return future

    def _serve(self) -> None:
        while (item := self._queue.get()) is not None:
            future, work = item
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(work())
                except BaseException as err:  # the awaiting side re-raises it
                    future.set_exception(err)
            del item, future, work  # nothing of the work outlives it in an idle thread
            self._idle.release()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        with self._lock:
            self._shut = True
            threads = list(self._threads)
        if cancel_futures:
            while True:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is not None:
                    item[0].cancel()
        for _ in threads:
            self._queue.put(None)
        if wait:
            for thread in threads:
                thread.join()
