"""File helpers shared by the file tools: byte-exact text, safe writes and diffs.

Files are decoded with ``surrogateescape``: bytes that are not UTF-8 become lone surrogates
and are written back as the same bytes, so a tool that changes one line preserves every
other byte of the file (encodings, line endings, a missing final newline).
"""

from __future__ import annotations

import contextlib
import difflib
import os
import stat
import tempfile
from pathlib import Path

BINARY_SNIFF = 8192
ENCODING = "utf-8"
ERRORS = "surrogateescape"


class NotARegularFile(OSError):
    """A FIFO, socket or device: opening it could block or never end, so no tool does."""


def check_regular(path: Path) -> os.stat_result | None:
    """The file's status without opening it; None if it does not exist. Folders pass (the
    callers say what they need); FIFOs, sockets and devices raise."""
    try:
        info = path.stat()
    except FileNotFoundError:
        return None
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise NotARegularFile(f"{path} is not a regular file (a FIFO, socket or device); "
                              "file tools do not open those")
    return info


def decode(data: bytes) -> str:
    return data.decode(ENCODING, errors=ERRORS)


def encode(text: str) -> bytes:
    return text.encode(ENCODING, errors=ERRORS)


def printable(text: str) -> str:
    """``text`` with undecodable bytes shown as U+FFFD, for messages and previews."""
    return encode(text).decode(ENCODING, errors="replace")


def newline_of(text: str) -> str:
    """The file's line ending: ``\\r\\n`` when every line ends so, else ``\\n``."""
    lf = text.count("\n")
    return "\r\n" if lf and text.count("\r\n") == lf else "\n"


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename.

    A reader (or a crash) sees the old file or the new one, never half of it. Parent folders
    are created; an existing file keeps its permission bits.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(encode(text))
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF]


def read_existing(path: Path) -> str | None:
    """The text of ``path`` (byte-exact, see the module), None if it does not exist; binary
    files raise ValueError, FIFOs, sockets and devices :class:`NotARegularFile`."""
    info = check_regular(path)
    if info is None:
        return None
    if stat.S_ISDIR(info.st_mode):
        raise IsADirectoryError(f"{path} is a directory")
    data = path.read_bytes()
    if is_binary(data):
        raise ValueError(f"{path} is a binary file; it will not be edited as text")
    return decode(data)


def unified_diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True),
                                 fromfile=f"a/{name}", tofile=f"b/{name}")
    return printable("".join(line if line.endswith("\n") else
                             line + "\n\\ No newline at end of file\n" for line in lines))
