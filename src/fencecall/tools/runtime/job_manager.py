"""Background jobs: commands that go on after the call that started them returned.

A shell command still running after ``background_after`` seconds, or one that left processes
behind (``cmd &``), is handed to the conversation's :class:`JobManager` as job N (small
integers from 1, per conversation) together with its process, which the manager then owns:
a pump thread copies what the job writes into ``N.log`` in the jobs folder (capped on disk:
past the cap the job is stopped), notices when it ends, and wakes anyone waiting. Closing or
aborting the manager ends every job's process tree, so no job outlives its conversation.

The manager knows nothing of bash: a job is a :class:`Running` (see the shell session's
retired shells). Its output files are unnamed, held by descriptor and read at offsets; the
disk cap counts the blocks they take, not the bytes copied so far (a flood writes faster
than a copy), and each file the job writes is also capped by ``RLIMIT_FSIZE``.
"""

from __future__ import annotations

import contextlib
import os
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, Protocol

from ...defaults import BACKGROUND_AFTER, MAX_JOBS
from ._capture import on_disk
from .output import cut_note

TICK = 0.1
"""Seconds between two looks at the running jobs."""
_CHUNK = 4 * 1024 * 1024
"""Bytes copied from one output file at most per look (a flood does not hold the lock)."""
_LOG = re.compile(r"(\d+)\.log")

State = Literal["running", "ended", "killed", "overflowed", "stopped"]
"""``stopped``: ended by the conversation's end (or a time limit), not by the model."""


class Running(Protocol):
    """The processes of one job, as the manager drives them."""

    def poll(self) -> tuple[bool, int | None]:
        """(ended?, exit status where known); never blocks."""
        ...

    def kill(self) -> None:
        """End every process of the job (its whole tree) and reap them."""
        ...

    def close(self) -> None:
        """Release what is left once the job ended or was killed (files, pipes)."""
        ...


class JobError(ValueError):
    """A job that does not exist, or a request the manager cannot grant; said to the model."""


@dataclass(frozen=True, slots=True)
class JobView:
    """One job as a reader sees it at one moment."""

    id: int
    command: str
    state: State
    runtime: float
    """Seconds it ran (so far, or until it ended)."""
    exit_code: int | None
    output: str = ""
    """What it wrote since the last read (stdout and stderr as they came), its middle cut
    when long; empty where the view is not a read."""
    log: Path | None = None
    """The file that holds all of its output."""

    @property
    def running(self) -> bool:
        return self.state == "running"


class _Job:
    """A job's state; every field is guarded by the manager's lock."""

    def __init__(self, job_id: int, command: str, running: Running,
                 outputs: tuple[int | None, ...], log_fd: int, log: Path):
        self.id = job_id
        self.command = command
        self.running = running
        self.outputs = outputs
        self.copied = [0 for _ in outputs]
        self.log_fd = log_fd
        self.log = log
        self.size = 0
        self.read_at = 0
        self.started = time.monotonic()
        self.ended_at: float | None = None
        self.state: State = "running"
        self.exit_code: int | None = None
        self.reported = False
        """Whether the model has seen that it ended (a read, a wait, a notice)."""

    def runtime(self) -> float:
        return (self.ended_at or time.monotonic()) - self.started

    def release(self) -> None:
        for fd in self.outputs:
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self.outputs = tuple(None for _ in self.outputs)
        with contextlib.suppress(Exception):
            self.running.close()


class JobManager:
    """The background jobs of one conversation.

    ``folder`` makes (on first use) the folder the job logs go to; ``output_limit`` is what a
    read returns at most (characters; the middle of more is cut), ``disk_limit`` what a job
    may write before it is stopped, ``max_jobs`` how many may run at once.
    ``background_after`` is the shell's: seconds a command runs before it becomes a job
    (None: never)."""

    def __init__(self, folder: Callable[[], Path], *, output_limit: int, disk_limit: int,
                 max_jobs: int = MAX_JOBS, background_after: float | None = BACKGROUND_AFTER):
        self._folder_factory = folder
        self._folder: Path | None = None
        self.output_limit = output_limit
        self.disk_limit = disk_limit
        self.max_jobs = max_jobs
        self.background_after = background_after
        self._jobs: dict[int, _Job] = {}
        self._next_id: int | None = None
        self._cond = threading.Condition()
        self._pumping = False
        self._closed = False

    # -- adopting --------------------------------------------------------------------------

    def room(self) -> bool:
        """Whether one more job may start now."""
        with self._cond:
            return not self._closed and self._running_count() < self.max_jobs

    def _running_count(self) -> int:
        return sum(job.state == "running" for job in self._jobs.values())

    def adopt(self, command: str, running: Running, outputs: tuple[int, ...], *,
              ran_for: float = 0.0) -> tuple[int, tuple[bytes, ...]]:
        """Make ``running`` job N, which has run for ``ran_for`` seconds; its output so far,
        read from the files ``outputs`` (descriptors of stdout and stderr, which the manager
        duplicates), goes to its log and is returned (it counts as read). Raises
        :class:`JobError` when no job may start (the caller keeps ``running``)."""
        with self._cond:
            if self._closed:
                raise JobError("the conversation is ending; no job starts now")
            if self._running_count() >= self.max_jobs:
                raise JobError(f"{self.max_jobs} jobs are running already (the limit)")
            folder = self._jobs_folder()
            job_id = self._new_id(folder)
            log = folder / f"{job_id}.log"
            log_fd = os.open(log, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_APPEND | os.O_CLOEXEC, 0o600)
            job = _Job(job_id, command, running, tuple(map(_duplicate, outputs)), log_fd, log)
            job.started -= ran_for
            self._jobs[job_id] = job
            so_far = self._copy(job)
            job.read_at = job.size
            self._start_pump()
            return job_id, so_far

    def _jobs_folder(self) -> Path:
        if self._folder is None:
            self._folder = self._folder_factory()
        return self._folder

    def _new_id(self, folder: Path) -> int:
        """1 + the highest job of the conversation, its logs from earlier runs counted (a
        resumed conversation goes on numbering)."""
        if self._next_id is None:
            found = [int(m.group(1)) for name in os.listdir(folder)
                     if (m := _LOG.fullmatch(name)) is not None]
            self._next_id = max(found, default=0) + 1
        job_id = self._next_id
        self._next_id += 1
        return job_id

    # -- the pump ----------------------------------------------------------------------------

    def _start_pump(self) -> None:
        if not self._pumping:
            self._pumping = True
            threading.Thread(target=self._pump, name="fencecall-jobs", daemon=True).start()

    def _pump(self) -> None:
        with self._cond:
            try:
                while not self._closed:
                    live = [job for job in self._jobs.values() if job.state == "running"]
                    if not live:
                        break
                    for job in live:
                        try:
                            self._tick(job)
                        except Exception:  # never leave the others unwatched: end this one
                            self._end(job, "stopped", None, kill=True)
                    self._cond.notify_all()
                    self._cond.wait(TICK)
            finally:
                self._pumping = False

    def _tick(self, job: _Job) -> None:
        """Copy the job's new output, stop it past the disk cap, and notice its end."""
        ended, status = job.running.poll()
        self._copy(job)
        if job.size >= self.disk_limit or _on_disk(job.outputs) > self.disk_limit:
            self._end(job, "overflowed", None, kill=True)
        elif ended:
            self._copy(job)  # what it wrote between the copy and its end
            self._end(job, "ended", status, kill=False)

    def _copy(self, job: _Job) -> tuple[bytes, ...]:
        """Append what each output file gained to the log, up to the disk cap; returns the
        new bytes of each."""
        new = []
        for index, fd in enumerate(job.outputs):
            room = self.disk_limit - job.size
            if fd is None or room <= 0:
                new.append(b"")
                continue
            try:
                chunk = os.pread(fd, min(_CHUNK, room), job.copied[index])
            except OSError:
                chunk = b""
            if chunk:
                try:
                    written = os.write(job.log_fd, chunk)
                except OSError:  # a full disk: the job is stopped as past the cap
                    written, job.size = 0, self.disk_limit
                job.copied[index] += written
                job.size += written
                chunk = chunk[:written]
            new.append(chunk)
        return tuple(new)

    def _end(self, job: _Job, state: State, status: int | None, *, kill: bool) -> None:
        if kill:
            with contextlib.suppress(Exception):
                job.running.kill()
        job.state, job.exit_code, job.ended_at = state, status, time.monotonic()
        job.release()
        self._cond.notify_all()

    # -- reading -------------------------------------------------------------------------

    def _get(self, job_id: int) -> _Job:
        job = self._jobs.get(job_id)
        if job is None:
            known = ", ".join(map(str, self._jobs)) or "none"
            raise JobError(f"there is no job {job_id} (jobs of this conversation: {known})")
        return job

    def _view(self, job: _Job, *, read: bool) -> JobView:
        output = ""
        if read:
            output = self._unread(job)
            if job.state != "running":
                job.reported = True
        return JobView(job.id, job.command, job.state, job.runtime(), job.exit_code, output,
                       job.log)

    def _unread(self, job: _Job) -> str:
        """What the log gained since the last read, its middle cut past the output limit."""
        if job.state == "running":
            self._copy(job)
        start, end = job.read_at, job.size
        job.read_at = end
        half = max(self.output_limit // 2, 1)
        if end - start <= 2 * half:
            return _decode(os.pread(job.log_fd, end - start, start))
        head = _decode(os.pread(job.log_fd, half, start))
        tail = _decode(os.pread(job.log_fd, half, end - half))
        return f"{head}\n{cut_note(end - start - 2 * half, 'bytes')}\n{tail}"

    def views(self) -> list[JobView]:
        """Every job of the conversation (a listing shows an end: it counts as told)."""
        with self._cond:
            views = []
            for job in self._jobs.values():
                if job.state != "running":
                    job.reported = True
                views.append(self._view(job, read=False))
            return views

    def output(self, job_id: int) -> JobView:
        """Job ``job_id`` with what it wrote since the last read."""
        with self._cond:
            return self._view(self._get(job_id), read=True)

    def wait(self, job_id: int, seconds: float) -> JobView:
        """Wait up to ``seconds`` for job ``job_id`` to end; then :meth:`output`."""
        deadline = time.monotonic() + seconds
        with self._cond:
            job = self._get(job_id)
            while job.state == "running":
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                if not self._pumping:  # cannot happen while it runs; never wait blind
                    self._start_pump()
                self._cond.wait(min(left, TICK * 2))
            return self._view(job, read=True)

    def kill(self, job_id: int) -> JobView:
        """End job ``job_id``'s whole process tree (if it still runs); then :meth:`output`."""
        with self._cond:
            job = self._get(job_id)
            if job.state == "running":
                self._copy(job)
                self._end(job, "killed", None, kill=True)
            return self._view(job, read=True)

    def notices(self) -> list[JobView]:
        """The jobs that ended since the model last heard of them (each told once)."""
        with self._cond:
            ended = [job for job in self._jobs.values()
                     if job.state != "running" and not job.reported]
            for job in ended:
                job.reported = True
            return [self._view(job, read=False) for job in ended]

    def running(self) -> list[JobView]:
        """The jobs running now (nothing counts as told: none of them ended)."""
        with self._cond:
            return [self._view(job, read=False) for job in self._jobs.values()
                    if job.state == "running"]

    def counts(self) -> dict[str, int]:
        """How many jobs started, and how many are running now."""
        with self._cond:
            return {"started": len(self._jobs), "running": self._running_count()}

    # -- ending ------------------------------------------------------------------------------

    def stop_all(self) -> list[int]:
        """End every running job (a time limit, the conversation's end); their ids."""
        with self._cond:
            live = [job for job in self._jobs.values() if job.state == "running"]
            for job in live:
                self._copy(job)
                self._end(job, "stopped", None, kill=True)
            return [job.id for job in live]

    def abort(self) -> None:
        """End every job and start no other, from any thread (a batch task's stop)."""
        with self._cond:
            self._closed = True
        self.stop_all()

    def close(self) -> None:
        """End every job and close the logs; safe to call twice."""
        self.abort()
        with self._cond:
            for job in self._jobs.values():
                with contextlib.suppress(OSError):
                    os.close(job.log_fd)
                job.log_fd = -1


def _duplicate(fd: int) -> int | None:
    try:
        return os.dup(fd)
    except OSError:
        return None


def _on_disk(fds: tuple[int | None, ...]) -> int:
    return on_disk(*(fd for fd in fds if fd is not None))


def _decode(data: bytes) -> str:
    """``data`` as text; a character cut at either end by a read is replaced, not an error."""
    return data.decode("utf-8", errors="replace")
