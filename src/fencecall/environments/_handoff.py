"""Descriptors handed to a process in a container by name, as neither CLI needs to pass them.

docker's ``exec`` cannot pass descriptors (podman's ``--preserve-fds`` can), so both take
this one path. A host folder of the environment's is mounted at its own path in the
container, writable (a file opened for writing on a read-only mount fails, even one that
exists). For one start, a folder in it with a random name gets a name for each descriptor:
a hard link of the unnamed file the caller holds, or the FIFO that :meth:`Handoff.pipe`
made. A wrapper in the container opens them as its descriptors 3, 4, …, writes a byte to a
FIFO of its own to say so, and execs the command; then the names are removed, and the files
are unnamed again, held by descriptor on both sides, as ``--preserve-fds`` leaves them.

The container may write in that folder, so the host never resolves a path there: every
step is relative to a descriptor of a folder it made, without following links. What the
container could do there (open a name before the wrapper does, swap it) only touches its own
session's output, which it writes anyway; the files stay capped on the host by their blocks.
The names are open to every user (the image's user may be anyone), in a folder others may
enter but not list, for the moments until the wrapper has opened them.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import secrets
import shlex
import shutil
import stat
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from ..sandbox import kill_group, readable
from ._container_cli import ContainerError

_OPENS_WITHIN = 60.0
"""Seconds the wrapper has to open the descriptors (the container's exec starting)."""
_READY = "ready"
_OPEN = os.O_NOFOLLOW | os.O_CLOEXEC


class Handoff:
    """The handoff folder ``folder`` (mounted writable at its own path in the container)."""

    def __init__(self, folder: Path):
        self.folder = folder
        self._fd = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _OPEN)
        self._fifos: dict[tuple[int, int], str] = {}
        self._lock = threading.Lock()

    def pipe(self) -> tuple[int, int]:
        """(read end, write end) of a new pipe that :meth:`start` can hand over: a FIFO
        of this folder's, held open at both ends."""
        name = f"pipe-{secrets.token_hex(16)}"
        os.mkfifo(name, 0o600, dir_fd=self._fd)
        read = _open_fifo(name, os.O_RDONLY | os.O_NONBLOCK, self._fd)
        try:
            write = os.open(name, os.O_WRONLY | _OPEN, dir_fd=self._fd)
        except BaseException:
            os.close(read)
            raise
        info = os.fstat(read)
        if os.fstat(write).st_ino != info.st_ino:
            os.close(read)
            os.close(write)
            raise ContainerError("a FIFO of the handoff folder was replaced as it was made")
        os.set_blocking(read, True)
        os.fchmod(read, 0o666)
        with self._lock:
            self._fifos[(info.st_dev, info.st_ino)] = name
        return read, write

    def start(self, fds: Sequence[int], run: Callable[[list[str]], subprocess.Popen[bytes]]
              ) -> subprocess.Popen[bytes]:
        """``run(wrapper)``, where ``wrapper`` is the argv prefix (``sh -c … sh``) that opens
        ``fds`` as 3, 4, … and execs the rest; returns once it has opened them all."""
        if not fds:
            return run([])
        folder = f"start-{secrets.token_hex(16)}"
        os.mkdir(folder, 0o700, dir_fd=self._fd)
        inside = os.open(folder, os.O_RDONLY | os.O_DIRECTORY | _OPEN, dir_fd=self._fd)
        fifos: list[str] = []
        try:
            os.fchmod(inside, 0o711)
            where = f"{self.folder}/{folder}"
            redirections = [self._name(inside, where, at, fd, fifos)
                            for at, fd in enumerate(fds, 3)]
            os.mkfifo(_READY, 0o600, dir_fd=inside)
            ready = _open_fifo(_READY, os.O_RDONLY | os.O_NONBLOCK, inside)
            try:
                os.fchmod(ready, 0o666)
                script = (f"exec {' '.join(redirections)} && printf 1 >"
                          f"{shlex.quote(f'{where}/{_READY}')} && exec \"$@\"")
                proc = run(["sh", "-c", script, "sh"])
                try:
                    _await(ready, proc)
                except BaseException:
                    kill_group(proc)
                    raise
                return proc
            finally:
                os.close(ready)
        finally:
            os.close(inside)
            self._forget(folder, fifos)

    def _name(self, inside: int, where: str, at: int, fd: int, fifos: list[str]) -> str:
        """The wrapper's redirection that opens ``fd`` as ``at``: a FIFO by its name, a
        file by a link made in the folder ``inside`` (``where`` in the container), opened
        to append where ``fd`` writes (a file's end moves as the host clears it)."""
        info = os.fstat(fd)
        writes = fcntl.fcntl(fd, fcntl.F_GETFL) & os.O_ACCMODE != os.O_RDONLY
        if stat.S_ISFIFO(info.st_mode):
            with self._lock:
                name = self._fifos.get((info.st_dev, info.st_ino))
            if name is None:
                raise ContainerError("only a pipe made by the environment's pipe() can be "
                                     "handed to a process in a container")
            fifos.append(name)
            return f"{at}{'>' if writes else '<'}{shlex.quote(f'{self.folder}/{name}')}"
        if not stat.S_ISREG(info.st_mode):
            raise ContainerError("only files and the environment's pipes can be handed to "
                                 "a process in a container")
        name = str(at)
        try:
            os.link(f"/proc/self/fd/{fd}", name, dst_dir_fd=inside, follow_symlinks=True)
        except FileNotFoundError as err:  # unnamed, and no longer of O_TMPFILE's making
            raise ContainerError("a file without a name can be handed into a container "
                                 "once; make a new one for each process") from err
        os.fchmod(fd, 0o666)
        return f"{at}{'>>' if writes else '<'}{shlex.quote(f'{where}/{name}')}"

    def _forget(self, folder: str, fifos: list[str]) -> None:
        """Remove the start's folder and the names of the FIFOs it handed over."""
        with contextlib.suppress(OSError):
            shutil.rmtree(folder, dir_fd=self._fd)
        with self._lock:
            self._fifos = {key: name for key, name in self._fifos.items()
                           if name not in fifos}
            for name in fifos:
                with contextlib.suppress(OSError):
                    os.unlink(name, dir_fd=self._fd)

    def close(self) -> None:
        os.close(self._fd)
        shutil.rmtree(self.folder, ignore_errors=True)


def _open_fifo(name: str, flags: int, folder: int) -> int:
    """``name`` in ``folder`` opened, and checked to be the FIFO just made there (the
    container may have put something else in its place: never a link, which is not
    followed, but it may be a device, which is closed unused)."""
    fd = os.open(name, flags | _OPEN, dir_fd=folder)
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        os.close(fd)
        raise ContainerError("a FIFO of the handoff folder was replaced as it was made")
    return fd


def _await(ready: int, proc: subprocess.Popen[bytes]) -> None:
    """Wait for the wrapper's byte on ``ready``; ContainerError where its process ends (or
    the time passes) first."""
    deadline = time.monotonic() + _OPENS_WITHIN
    while time.monotonic() < deadline:
        if readable(ready, 0.05):
            if os.read(ready, 1) == b"1":
                return
            break
        if proc.poll() is not None:
            break
    raise ContainerError("the process in the container could not open the descriptors "
                         "handed to it (the image has no sh, or its user cannot enter the "
                         "handoff folder)")
