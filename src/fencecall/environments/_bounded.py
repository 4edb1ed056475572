"""Running a command to its end while keeping a bounded part of what it prints.

A command in a container (a task's verifier, a script the model left behind) may print
gigabytes; collecting all of it and then keeping a tail would hold all of it in memory
first. Each stream keeps its first and last bytes as they come, within a limit, and counts
what falls between; the text says how much was cut there.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass

OUTPUT_LIMIT = 1 << 20
"""Bytes kept of each stream (half its head, half its tail)."""
_CHUNK = 1 << 16


class _Kept:
    """The head and the tail of a stream, within ``limit`` bytes, and the count between."""

    def __init__(self, limit: int):
        self._half = limit // 2
        self.head = bytearray()
        self.tail: deque[bytes] = deque()
        self.tail_size = 0
        self.cut = 0

    def add(self, data: bytes) -> None:
        room = self._half - len(self.head)
        if room > 0:
            self.head += data[:room]
            data = data[room:]
        if not data:
            return
        self.tail.append(data)
        self.tail_size += len(data)
        while self.tail_size - len(self.tail[0]) >= self._half:
            self.cut += len(self.tail[0])
            self.tail_size -= len(self.tail.popleft())
        over = self.tail_size - self._half
        if over > 0:
            self.tail[0] = self.tail[0][over:]
            self.tail_size -= over
            self.cut += over

    def text(self) -> str:
        head = self.head.decode("utf-8", errors="replace")
        tail = b"".join(self.tail).decode("utf-8", errors="replace")
        if not self.cut:
            return head + tail
        return f"{head}\n[... {self.cut} bytes cut ...]\n{tail}"


@dataclass(frozen=True, slots=True)
class Finished:
    """How a command ended: its exit status (None: it ran past its timeout and was killed)
    and what it printed, bounded."""

    returncode: int | None
    stdout: str
    stderr: str


def run_bounded(argv: Sequence[str], timeout: float | None, *, limit: int = OUTPUT_LIMIT,
                on_timeout: Callable[[], None] | None = None) -> Finished:
    """Run ``argv`` (stdin empty) until it ends and its streams close, keeping ``limit``
    bytes of each. Past ``timeout`` it is killed with its process group, after
    ``on_timeout`` (which stops what it started elsewhere: in a container)."""
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    kept = {proc.stdout.fileno(): _Kept(limit), proc.stderr.fileno(): _Kept(limit)}
    deadline = None if timeout is None else time.monotonic() + timeout
    ended = False
    try:
        ended = _drain(kept, deadline) and _waited(proc, deadline)
        if not ended and on_timeout is not None:
            on_timeout()
    finally:
        if not ended:  # not reaped yet, so its pid is still its group's
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    out, err = kept.values()
    return Finished(proc.returncode if ended else None, out.text(), err.text())


def _drain(kept: dict[int, _Kept], deadline: float | None) -> bool:
    """Read the streams into ``kept`` until both close; False at the deadline."""
    poller = select.poll()
    for fd in kept:
        poller.register(fd, select.POLLIN)
    left = set(kept)
    while left:
        wait = None if deadline is None else deadline - time.monotonic()
        if wait is not None and wait <= 0:
            return False
        for fd, _ in poller.poll(None if wait is None else wait * 1000):
            data = os.read(fd, _CHUNK)
            if data:
                kept[fd].add(data)
            else:
                poller.unregister(fd)
                left.discard(fd)
    return True


def _waited(proc: subprocess.Popen[bytes], deadline: float | None) -> bool:
    """Whether ``proc`` ends by the deadline (it may close its streams and go on)."""
    try:
        proc.wait(None if deadline is None else max(0.0, deadline - time.monotonic()))
    except subprocess.TimeoutExpired:
        return False
    return True
