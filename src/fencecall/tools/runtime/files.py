"""File helpers shared by the file tools: safe writes, text reads and diffs."""

from __future__ import annotations

import contextlib
import difflib
import os
import tempfile
from pathlib import Path

BINARY_SNIFF = 8192


def atomic_write(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temporary file and a rename.

    A reader (or a crash) sees the old file or the new one, never half of it. Parent folders
    are created; an existing file keeps its permission bits.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = path.stat().st_mode & 0o7777 if path.exists() else None
    fd, temp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
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
    """The text of ``path``, None if it does not exist; binary files raise ValueError."""
    if not path.exists():
        return None
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    data = path.read_bytes()
    if is_binary(data):
        raise ValueError(f"{path} is a binary file; it will not be edited as text")
    return data.decode("utf-8", errors="replace")


def unified_diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True),
                                 fromfile=f"a/{name}", tofile=f"b/{name}")
    return "".join(line if line.endswith("\n") else line + "\n\\ No newline at end of file\n"
                   for line in lines)
