"""JSON-lines files written a line at a time, each line one ``write`` (conversation logs,
batch results): a kill or a full disk mid-write leaves at most the last line torn. Reading
takes the complete lines only; setting aside moves the torn rest to a side file, so that
the next line written starts a line of its own instead of gluing onto the fragment.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

SIDE_FILE_MODE = 0o600


@dataclass(frozen=True, slots=True)
class JsonLines:
    """A file's complete lines as read: each non-blank one's number (from 1) and its JSON
    object, or why it holds none ("could not be read", "is not a record"), in file order;
    and where the complete lines end (past them lies a torn last line)."""

    lines: list[tuple[int, dict[str, Any] | str]]
    valid_end: int


def read_lines(data: bytes) -> JsonLines:
    """The complete lines of ``data``, the contents of a JSON-lines file."""
    valid_end = data.rfind(b"\n") + 1
    lines: list[tuple[int, dict[str, Any] | str]] = []
    for number, line in enumerate(data[:valid_end].split(b"\n")[:-1], 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:  # not JSON, or not UTF-8
            lines.append((number, "could not be read"))
            continue
        lines.append((number, record if isinstance(record, dict) else "is not a record"))
    return JsonLines(lines, valid_end)


def set_aside(path: Path, fd: int, valid_end: int, fragment: bytes) -> Path:
    """Write ``fragment`` (the torn line past ``valid_end``) to a new side file beside
    ``path`` and cut the file, open at ``fd``, back to its complete lines; both fsynced.
    Returns the side file."""
    side = path.with_name(f"{path.name}.torn-{datetime.now(UTC):%Y%m%d-%H%M%S-%f}")
    side_fd = os.open(side, os.O_WRONLY | os.O_CREAT | os.O_EXCL, SIDE_FILE_MODE)
    try:
        os.write(side_fd, fragment)
        os.fsync(side_fd)
    finally:
        os.close(side_fd)
    os.ftruncate(fd, valid_end)
    os.fsync(fd)
    return side
