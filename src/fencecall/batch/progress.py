"""How far a batch is: done, failed, running, model requests in flight and retried (and a
provider's pause for its rate limit), rate and ETA.

A rich progress bar at a terminal; elsewhere (a log file, CI) one plain line every
``every`` seconds, and one at the end. Both go to stderr, so stdout stays for results.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TextIO

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeRemainingColumn,
)

from ..providers import GateStats
from ._results import TaskResult


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds >= 3600:
        return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


class BatchProgress:
    """Counts a batch's tasks as they start and finish, and shows it (see the module).
    ``total`` is the tasks this run will run; ``skipped`` those already finished earlier."""

    def __init__(self, total: int, *, skipped: int = 0, console: Console | None = None,
                 live: bool | None = None, every: float = 10.0, stream: TextIO | None = None):
        self.total, self.skipped = total, skipped
        self.done = self.failed = 0
        self._running: set[str] = set()
        self._requests = GateStats(0, 0, 0, 0.0)
        self.console = console or Console(stderr=True, highlight=False)
        self.live = self.console.is_terminal if live is None else live
        self.every = every
        self._stream = stream
        self._start = time.monotonic()
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._bar: Progress | None = None
        self._bar_task: TaskID | None = None
        self._ticker: threading.Thread | None = None

    @property
    def running(self) -> int:
        return len(self._running)

    def line(self) -> str:
        """The state in one line: ``12/100 done, 2 failed, 10 running, 9 requests in flight,
        3 retries, 3.1 tasks/s, ETA 28s``."""
        with self._lock:
            done, failed, running = self.done, self.failed, len(self._running)
        elapsed = max(time.monotonic() - self._start, 1e-9)
        rate = done / elapsed
        left = self.total - done
        eta = f"ETA {_duration(left / rate)}" if rate > 0 and left else "ETA -"
        return (f"{done}/{self.total} done, {failed} failed, {running} running, "
                f"{self._requests_text()}, {rate:.2f} tasks/s, {eta}")

    def _requests_text(self) -> str:
        now = self._requests
        text = (f"{now.in_flight} request{'s' * (now.in_flight != 1)} in flight, "
                f"{now.retries} retr{'ies' if now.retries != 1 else 'y'}")
        if now.paused_for > 0:
            text += f", paused {math.ceil(now.paused_for)}s by the server"
        return text

    def requests(self, now: GateStats) -> None:
        """The model requests now (see :data:`~._scheduler.BatchEvent`)."""
        self._requests = now
        self._refresh()

    def started(self, task_id: str) -> None:
        with self._lock:
            self._running.add(task_id)
        self._refresh()

    def finished(self, result: TaskResult) -> None:
        with self._lock:
            self._running.discard(result.id)
            self.done += 1
            self.failed += result.failed
        self._refresh()

    def _refresh(self) -> None:
        if self._bar is None or self._bar_task is None:
            return
        elapsed = max(time.monotonic() - self._start, 1e-9)
        self._bar.update(self._bar_task, completed=self.done, failed=self.failed,
                         running=self.running, requests=self._requests_text(),
                         rate=f"{self.done / elapsed:.2f} tasks/s")

    def _print(self, text: str) -> None:
        if self._stream is not None:
            print(text, file=self._stream, flush=True)
        else:
            self.console.print(text, markup=False, highlight=False, soft_wrap=True)

    def _tick(self) -> None:
        while not self._closed.wait(self.every):
            self._print(f"fencecall batch: {self.line()}")

    def __enter__(self) -> BatchProgress:
        if self.skipped:
            self._print(f"fencecall batch: {self.skipped} task(s) already have results; "
                        f"{self.total} to run")
        if self.live:
            self._bar = Progress(
                TextColumn("[bold]batch"), BarColumn(), MofNCompleteColumn(),
                TextColumn("[red]{task.fields[failed]} failed"),
                TextColumn("{task.fields[running]} running"),
                TextColumn("{task.fields[requests]}", markup=False),
                TextColumn("{task.fields[rate]}"),
                TextColumn("ETA"), TimeRemainingColumn(), console=self.console)
            self._bar_task = self._bar.add_task("batch", total=self.total, failed=0, running=0,
                                                requests=self._requests_text(),
                                                rate="0.00 tasks/s")
            self._bar.start()
        else:
            self._ticker = threading.Thread(target=self._tick, name="fencecall-batch-progress",
                                            daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._closed.set()
        if self._bar is not None:
            self._refresh()
            self._bar.stop()
        if self._ticker is not None:
            self._ticker.join()
        self._print(f"fencecall batch: {self.line()}")
