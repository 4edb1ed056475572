"""Bytes are sacred: file tools change exactly what was asked and keep every other byte."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from fencecall.message import Status

from ..support import F, tool_session
from .conftest import Run

# Latin-1 bytes (not UTF-8), CRLF line ends, no final newline.
LEGACY = b"caf\xe9 = 1\r\nname = 'M\xfcller'\r\nlast = True"


def test_append_keeps_every_byte_and_the_files_line_ends(run: Run, workspace: Path) -> None:
    (workspace / "legacy.py").write_bytes(LEGACY)
    [result] = run(f"{F}append legacy.py\nadded = 2\nmore = 3\n{F}\n")
    assert result.status is None, result.content
    assert (workspace / "legacy.py").read_bytes() == LEGACY + b"\r\nadded = 2\r\nmore = 3\r\n"


def test_patch_changes_one_line_and_nothing_else(run: Run, workspace: Path) -> None:
    (workspace / "legacy.py").write_bytes(LEGACY)
    patch = "<<<<<<< ORIGINAL\nlast = True\n=======\nlast = False\n>>>>>>> UPDATED"
    [result] = run(f"{F}patch legacy.py\n{patch}\n{F}\n")
    assert result.content == "Patched legacy.py (1 change(s)).", result.content
    assert (workspace / "legacy.py").read_bytes() == LEGACY.replace(b"True", b"False")


def test_whitespace_tolerant_patch_keeps_crlf(run: Run, workspace: Path) -> None:
    (workspace / "w.py").write_bytes(b"def f():\r\n    return 1\r\n\r\nx = f()\r\n")
    patch = "<<<<<<< ORIGINAL\nreturn 1\n=======\nreturn 2\n>>>>>>> UPDATED"
    [result] = run(f"{F}patch w.py\n{patch}\n{F}\n")
    assert result.status is None, result.content
    assert (workspace / "w.py").read_bytes() == b"def f():\r\n    return 2\r\n\r\nx = f()\r\n"


@pytest.mark.parametrize("line", ["# ... rest of the code", "    // existing code here",
                                  "# rest of the file unchanged", "/* ... remaining methods */",
                                  "<!-- the rest stays the same -->", "... (rest unchanged)"])
def test_a_placeholder_never_clobbers_a_real_file(run: Run, workspace: Path, line: str) -> None:
    (workspace / "app.py").write_text("def main():\n    work()\n")
    [result] = run(f"{F}save app.py\ndef main():\n    better()\n{line}\n{F}\n")
    assert result.status is Status.ERROR
    assert line.strip() in result.content and "use patch" in result.content
    assert (workspace / "app.py").read_text() == "def main():\n    work()\n"
    [created] = run(f"{F}save new.py\nx = 1\n{line}\n{F}\n")
    assert created.status is None  # nothing to clobber


def test_ordinary_comments_are_not_placeholders(run: Run, workspace: Path) -> None:
    (workspace / "app.py").write_text("old\n")
    text = "# The rest of this module parses input.\n# existing users keep their data\nx = 1\n"
    [result] = run(f"{F}save app.py\n{text}{F}\n")
    assert result.status is None, result.content


@pytest.mark.parametrize(("args", "error"), [
    ("0", "start must be 1 or more"), ("2 1", "end (1) is before start (2)"),
    ("1 0", "end must be 1 or more")])
def test_read_rejects_bad_ranges(run: Run, workspace: Path, args: str, error: str) -> None:
    (workspace / "f.txt").write_text("a\nb\nc\n")
    [result] = run(f"{F}read f.txt {args}\n{F}\n")
    assert result.status is Status.ERROR and error in result.content


def test_read_caps_a_huge_line_and_reads_several_files(run: Run, workspace: Path) -> None:
    (workspace / "min.js").write_text("x" * 9_000_000 + "\n")
    (workspace / "b.txt").write_text("bee\n")
    [result] = run(f"{F}read min.js b.txt\n{F}\n")
    assert len(result.content) < 10_000
    assert "[... 8998000 characters cut ...]" in result.content
    assert "b.txt (lines 1-1 of 1):\n1  bee" in result.content


def test_read_on_hint_parses_back_in_each_format(workspace: Path) -> None:
    from fencecall.tools.builtin import read

    (workspace / "long.txt").write_text("".join(f"line {n}\n" for n in range(1, 3001)))
    calls = {"markdown": f"{F}read long.txt\n{F}\n",
             "xml": "<tool-use><read args='long.txt'></read></tool-use>",
             "tool": '@read(r1): {"path": "long.txt"}'}
    for fmt, text in calls.items():
        with tool_session(workspace, ["read"], sandbox="off") as session:
            [first] = list(session.execute(text, fmt))
            hint = first.content.split("read on with:]\n")[1]
            [again] = list(session.execute(hint, fmt))
        assert again.content.startswith(f"long.txt (lines {read.MAX_LINES + 1}-3000"), fmt


def _with_a_fifo(workspace: Path) -> Path:
    fifo = workspace / "pipe"
    os.mkfifo(fifo)
    return fifo


@pytest.mark.parametrize("call", [f"{F}read pipe\n{F}\n", f"{F}save pipe\nx\n{F}\n",
                                  f"{F}append pipe\nx\n{F}\n",
                                  f"{F}patch pipe\n<<<<<<< ORIGINAL\na\n=======\nb\n"
                                  f">>>>>>> UPDATED\n{F}\n"])
def test_fifos_are_refused_without_blocking(run: Run, workspace: Path, call: str) -> None:
    _with_a_fifo(workspace)
    results: list[str] = []
    worker = threading.Thread(target=lambda: results.extend(m.content for m in run(call)),
                              daemon=True)
    worker.start()
    worker.join(timeout=10)
    assert not worker.is_alive(), "the tool blocked on the FIFO"
    assert "not a regular file" in results[0]
