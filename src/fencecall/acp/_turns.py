"""Running a session's turns in a worker thread, and stopping one as Ctrl-C does.

The agent loop is synchronous, so each turn runs in a thread of its own. A cancel raises
``KeyboardInterrupt`` in that thread (``PyThreadState_SetAsyncExc``): the loop, the reply
stream and the tools already handle Ctrl-C (the shell kills the command's process tree, the
results say "interrupted"), so a cancel is exactly the terminal's interrupt. Background
jobs are left running, as Ctrl-C leaves them. The exception is raised only while the turn
runs (under a lock the turn's end takes too), never into a thread that moved on.
"""

from __future__ import annotations

import contextvars
import ctypes
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Generic, TypeVar

T = TypeVar("T")


class Turn(Generic[T]):
    """One call of ``work`` in a thread of its own; :meth:`interrupt` stops it."""

    def __init__(self, work: Callable[[], T], on_interrupt: T):
        self.result: Future[T] = Future()
        self._work = work
        self._interrupted_value = on_interrupt
        self._lock = threading.Lock()
        self._running = True
        context = contextvars.copy_context()  # the telemetry in use, say
        self._thread = threading.Thread(target=context.run, args=(self._run,),
                                        name="fencecall-acp-turn", daemon=True)
        self._thread.start()

    def interrupt(self) -> None:
        """Raise KeyboardInterrupt in the turn's thread, if it still runs."""
        with self._lock:
            if self._running and self._thread.ident is not None:
                ctypes.pythonapi.PyThreadState_SetAsyncExc(
                    ctypes.c_ulong(self._thread.ident), ctypes.py_object(KeyboardInterrupt))

    def _run(self) -> None:
        started = False
        value: T = self._interrupted_value
        error: Exception | None = None
        while True:  # an interrupt may land anywhere until the lock says the turn is over
            try:
                if not started:
                    started = True
                    try:
                        value = self._work()
                    except Exception as err:
                        error = err
                with self._lock:
                    self._running = False
                break
            except KeyboardInterrupt:
                continue
        if error is not None:
            self.result.set_exception(error)
        else:
            self.result.set_result(value)
