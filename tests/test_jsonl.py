"""The one reader of append-only JSON-lines files (conversation logs, batch results)."""

from __future__ import annotations

import os
from pathlib import Path

from fencecall.jsonl import read_lines, set_aside


def test_complete_lines_are_read_in_order_and_a_torn_last_line_is_not() -> None:
    data = b'{"a": 1}\n\nnot json\n\xff\n[1]\n{"b": 2}\n{"torn'
    read = read_lines(data)
    assert read.lines == [(1, {"a": 1}), (3, "could not be read"), (4, "could not be read"),
                          (5, "is not a record"), (6, {"b": 2})]
    assert data[read.valid_end:] == b'{"torn'
    assert read_lines(b"").lines == [] and read_lines(b"").valid_end == 0


def test_a_torn_line_is_set_aside_and_the_file_cut_back(tmp_path: Path) -> None:
    path = tmp_path / "log.jsonl"
    path.write_bytes(b'{"a": 1}\n{"half')
    fd = os.open(path, os.O_RDWR)
    try:
        side = set_aside(path, fd, 9, b'{"half')
    finally:
        os.close(fd)
    assert path.read_bytes() == b'{"a": 1}\n'
    assert side.parent == tmp_path and side.name.startswith("log.jsonl.torn-")
    assert side.read_bytes() == b'{"half' and side.stat().st_mode & 0o777 == 0o600
