"""Unnamed files that catch what a sandboxed process writes.

A file in a folder the sandbox can write is one the command can replace with a symlink, a
FIFO or a thousand others, and which outlives the call. An unnamed file (``O_TMPFILE``) held
by descriptor and inherited by the process has no path at all: the process writes to the
descriptor it was given, fencecall reads at offsets, and the file is gone with its last
descriptor. Their size on disk is watched by blocks, which a sparse or racing writer cannot
hide, and they are read head and tail, never whole.
"""

from __future__ import annotations

import contextlib
import os
import tempfile

from .output import cut_note


def unnamed_file() -> int:
    """A descriptor of a new, empty, unnamed file in append mode (each write lands at the end,
    even after :func:`clear`)."""
    folder = tempfile.gettempdir()
    flags = os.O_RDWR | os.O_APPEND | os.O_CLOEXEC
    try:
        return os.open(folder, flags | os.O_TMPFILE, 0o600)
    except OSError:  # a file system without O_TMPFILE: a private file, unlinked at once
        fd, path = tempfile.mkstemp(dir=folder)
        try:
            return os.open(path, flags)
        finally:
            os.unlink(path)
            os.close(fd)


def holding(content: str | bytes) -> int:
    """A read-only descriptor of an unnamed file holding ``content`` (a script, a state, a
    filter), at its start: the process it is passed to can read it, not grow it."""
    fd = unnamed_file()
    try:
        rewrite(fd, content)
        return os.open(f"/proc/self/fd/{fd}", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        os.close(fd)


def script_file() -> tuple[int, int]:
    """A file fencecall writes scripts to and a process reads them from: a descriptor to
    write (:func:`rewrite`) and a read-only one to pass on. The file is read-only to all, so
    a process given the second cannot reopen it to write (``/proc/self/fd/N``) and change
    what it is given next, unless it may override file modes (a sandboxed one may not: its
    capabilities are dropped); anyone may read it (a container's user may be anyone), but it
    has no name, only descriptors."""
    writer = unnamed_file()
    try:
        reader = os.open(f"/proc/self/fd/{writer}", os.O_RDONLY | os.O_CLOEXEC)
        try:
            os.fchmod(writer, 0o444)
        except BaseException:
            os.close(reader)
            raise
    except BaseException:
        os.close(writer)
        raise
    return writer, reader


def rewrite(fd: int, content: str | bytes) -> None:
    """Make the file of ``fd`` (in append mode) hold ``content`` alone, however many writes
    that takes."""
    os.ftruncate(fd, 0)
    data = content.encode("utf-8", errors="surrogateescape") \
        if isinstance(content, str) else content
    while data:
        data = data[os.write(fd, data):]


def clear(*fds: int) -> None:
    for fd in fds:
        os.ftruncate(fd, 0)


def on_disk(*fds: int) -> int:
    """Bytes the files take on disk (by blocks: a sparse file counts what it holds)."""
    total = 0
    for fd in fds:
        with contextlib.suppress(OSError):
            info = os.fstat(fd)
            total += max(info.st_blocks * 512, info.st_size if info.st_blocks else 0)
    return total


def read_all(fd: int, limit: int) -> bytes | None:
    """The file's bytes, or None when it holds more than ``limit``."""
    size = os.fstat(fd).st_size
    return None if size > limit else os.pread(fd, size, 0)


def head_and_tail(fd: int, limit: int) -> str:
    """The file's text, its middle cut when it exceeds ``limit`` bytes."""
    size = os.fstat(fd).st_size
    half = limit // 2
    if size <= 2 * half:
        return os.pread(fd, size, 0).decode("utf-8", errors="replace")
    head = os.pread(fd, half, 0).decode("utf-8", errors="replace")
    tail = os.pread(fd, half, size - half).decode("utf-8", errors="replace")
    return f"{head}\n{cut_note(size - 2 * half, 'bytes')}\n{tail}"


def close(*fds: int | None) -> None:
    for fd in fds:
        if fd is not None:
            with contextlib.suppress(OSError):
                os.close(fd)
