"""The patch tool: exact and whitespace-tolerant matching, all-or-nothing, precise failures."""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecall.tools.runtime.patching import Hunk, PatchError, apply_patch, parse_patch

from ..support import F
from .conftest import Run

SOURCE = "def greet(name):\n    print('hello', name)\n    return name\n\n\ndef other():\n    pass\n"


def patch(path: str, *hunks: tuple[str, str]) -> str:
    body = "\n".join(f"<<<<<<< ORIGINAL\n{a}\n=======\n{b}\n>>>>>>> UPDATED" for a, b in hunks)
    return f"{F}patch {path}\n{body}\n{F}\n"


def test_exact_patch(run: Run, workspace: Path) -> None:
    (workspace / "app.py").write_text(SOURCE)
    [result] = run(patch("app.py", ("    print('hello', name)", "    print('hi', name)")))
    assert result.content == "Patched app.py (1 change(s))."
    assert "print('hi', name)" in (workspace / "app.py").read_text()


def test_whitespace_tolerant_patch_keeps_file_indentation(run: Run, workspace: Path) -> None:
    (workspace / "app.py").write_text(SOURCE)
    run(patch("app.py", ("print('hello', name)\nreturn name",
                         "print('bye', name)\nif name:\n    return name")))
    assert (workspace / "app.py").read_text().startswith(
        "def greet(name):\n    print('bye', name)\n    if name:\n        return name\n")


def test_several_parts_apply_all_or_nothing(run: Run, workspace: Path) -> None:
    (workspace / "app.py").write_text(SOURCE)
    [result] = run(patch("app.py", ("def other():", "def renamed():"),
                         ("    print('helo', nam)\n    return nam", "x")))
    assert result.failed
    assert "part 2 of 2: ORIGINAL was not found in app.py" in result.content
    assert "closest lines are 2-3" in result.content
    assert "-    print('helo', nam)" in result.content
    assert (workspace / "app.py").read_text() == SOURCE
    [ok] = run(patch("app.py", ("def other():", "def renamed():"), ("pass", "return 1")))
    assert ok.content == "Patched app.py (2 change(s))."
    assert (workspace / "app.py").read_text().endswith("def renamed():\n    return 1\n")


def test_ambiguous_and_missing(run: Run, workspace: Path) -> None:
    (workspace / "dup.py").write_text("x = 1\nx = 1\n")
    [ambiguous] = run(patch("dup.py", ("x = 1", "x = 2")))
    assert "matches 2 places" in ambiguous.content
    [missing] = run(patch("nope.py", ("a", "b")))
    assert "does not exist; use save" in missing.content
    assert (workspace / "dup.py").read_text() == "x = 1\nx = 1\n"


def test_malformed_patches() -> None:
    with pytest.raises(PatchError, match="line 1: expected '<<<<<<< ORIGINAL'"):
        parse_patch("just text")
    with pytest.raises(PatchError, match="no hunks"):
        parse_patch("\n\n")
    with pytest.raises(PatchError, match="ends inside a hunk"):
        parse_patch("<<<<<<< ORIGINAL\na\n=======\nb\n")
    with pytest.raises(PatchError, match="line 3: '>>>>>>> UPDATED' before '======='"):
        parse_patch("<<<<<<< ORIGINAL\na\n>>>>>>> UPDATED\n")
    with pytest.raises(PatchError, match="ORIGINAL section is empty"):
        apply_patch("text", [Hunk("", "b")])
    with pytest.raises(PatchError, match="No similar lines"):
        apply_patch("alpha\nbeta\n", [Hunk("zzzz qqqq 1234", "b")])
