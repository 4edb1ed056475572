"""Reading a reply stream that must end at a deadline, even when its server goes silent.

A stream read in the agent's thread blocks in the socket while the server sends nothing, so
a time limit checked between events could be passed by as long as the request timeout.
Under a deadline the stream is read by a thread of its own and handed over through a queue
that the agent waits on only until the deadline; the reader is then told to close the
stream (it does so at its next event; a server that stays silent is left to the request
timeout, in a daemon thread nobody waits for). Read so, with no deadline, a stream also
stops promptly when the agent's thread is interrupted while its server is silent.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from typing import Generic, TypeVar

E = TypeVar("E")
WAKE_EVERY = 0.1
"""The longest wait for the next event in one piece: an interrupt raised in the agent's
thread (an editor's cancel) lands between two waits, not when the server next speaks."""


class DeadlinePassed(Exception):
    """The deadline came before the stream's next event."""


@dataclass(frozen=True, slots=True)
class _Failed:
    error: BaseException


_END = object()


class Bounded(Generic[E]):
    """``stream``'s events until ``deadline`` (on ``time.monotonic``); iterating raises
    :class:`DeadlinePassed` there. :meth:`close` closes the stream (or has its reader
    close it)."""

    def __init__(self, stream: Generator[E, None, None], deadline: float):
        self._stream = stream
        self._deadline = deadline
        self._events: queue.SimpleQueue[object] = queue.SimpleQueue()
        self._closing = threading.Event()
        self._reader = threading.Thread(target=self._read, name="fencecall-reply-reader",
                                        daemon=True)
        self._reader.start()

    def _read(self) -> None:
        try:
            for event in self._stream:
                if self._closing.is_set():
                    break
                self._events.put(event)
            else:
                self._events.put(_END)
        except BaseException as err:  # handed to the agent's thread, raised there
            self._events.put(_Failed(err))
        finally:
            self._stream.close()

    def __iter__(self) -> Iterator[E]:
        while True:
            left = self._deadline - time.monotonic()
            if left <= 0:
                raise DeadlinePassed
            try:
                item = self._events.get(timeout=min(left, WAKE_EVERY))
            except queue.Empty:
                continue  # the deadline is checked again above
            if item is _END:
                return
            if isinstance(item, _Failed):
                raise item.error
            yield item  # type: ignore[misc]  # what the stream yielded: an E

    def close(self) -> None:
        self._closing.set()
