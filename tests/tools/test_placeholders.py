"""Content that is nothing but a placeholder never replaces a file, and is never appended."""

from __future__ import annotations

from pathlib import Path

import pytest

from fencecall.message import Status
from fencecall.tools.builtin.placeholders import only_placeholder

from ..support import F
from .conftest import Run

ORIGINAL = "def main():\n    work()\n"

STUBS = [
    "# ...", "// ...", "/* ... */", '""" ... """', "'''...'''", "...", "…", "<!-- ... -->",
    "-- ...", "; ...", "% ...", "[...]", "(...)", "[…]", "# ... existing code ...",
    "// rest unchanged", "# unchanged", "# (rest unchanged)", "// ... other methods ...",
    "<!-- the rest stays the same -->", "/*\n * ... existing code ...\n */", '"""\n...\n"""',
    "<!--\nrest of the file unchanged\n-->", "  # ...  \n\n# ...\n",
]

REAL = [
    "def f(): ...", "def f():\n    ...\n", "class P(Protocol):\n    def run(self) -> None: ...\n",
    "pass", "x = ...", "print('...')", "foo(...)",
    "And then... nothing happened.", "# Notes\n\nWait... really?\n", "Loading...",
    "# TODO: handle errors...", "# Other helpers", "# Existing users keep their data",
    "# The rest of this module parses input.", "## Rest", "// Previous", "# Same", "etc.",
    "# -*- coding: utf-8 -*-", "#!/bin/sh", "-- migrate: add users table", "; [section]",
    "/* licence: MIT */", '"""Utilities for parsing."""', "[...] as the paper says, it works",
]


@pytest.mark.parametrize("stub", STUBS)
def test_a_bare_placeholder_never_replaces_a_file(run: Run, workspace: Path, stub: str) -> None:
    (workspace / "app.py").write_text(ORIGINAL)
    [result] = run(f"{F}save app.py\n{stub}\n{F}\n")
    assert result.status is Status.ERROR
    assert result.content.startswith("save: not written: the content is only the placeholder")
    assert "whole content" in result.content and "use patch" in result.content
    assert (workspace / "app.py").read_text() == ORIGINAL
    [created] = run(f"{F}save new.py\n{stub}\n{F}\n")
    assert created.status is None, created.content  # nothing to replace


@pytest.mark.parametrize("stub", STUBS)
def test_a_bare_placeholder_is_never_appended(run: Run, workspace: Path, stub: str) -> None:
    (workspace / "app.py").write_text(ORIGINAL)
    [result] = run(f"{F}append app.py\n{stub}\n{F}\n")
    assert result.status is Status.ERROR
    assert result.content.startswith("append: not written: the content is only the placeholder")
    assert "written out in full" in result.content
    assert (workspace / "app.py").read_text() == ORIGINAL
    [fresh] = run(f"{F}append new.py\n{stub}\n{F}\n")
    assert fresh.status is Status.ERROR
    assert not (workspace / "new.py").exists()


def test_the_model_hears_what_was_refused_and_what_to_do(run: Run, workspace: Path) -> None:
    (workspace / "app.py").write_text(ORIGINAL)
    [saved] = run(f"{F}save app.py\n# ... existing code ...\n{F}\n")
    assert saved.content == (
        "save: not written: the content is only the placeholder '# ... existing code ...', "
        "which would replace the real text of app.py. Send the file's whole content, or use "
        "patch to change part of it.")
    [appended] = run(f"{F}append app.py\n// ...\n{F}\n")
    assert appended.content == (
        "append: not written: the content is only the placeholder '// ...', which adds no real "
        "text to app.py. Send the text to add, written out in full (use patch to change part "
        "of a file).")


# An ellipsis line is YAML's document end, and prose in text (see placeholders.py).
ELSEWHERE = [("app.yaml", "a: 1\n...\n"), ("app.yaml", "---\na: 1\n...\n"),
             ("app.yaml", "---\n...\n"), ("notes.md", "...\nx = 1\n")]


@pytest.mark.parametrize(("name", "text"), [("app.py", text) for text in REAL] + ELSEWHERE)
def test_real_content_is_written(run: Run, workspace: Path, name: str, text: str) -> None:
    assert only_placeholder(text) is None
    (workspace / name).write_text(ORIGINAL)
    [saved] = run(f"{F}save {name}\n{text}\n{F}\n")
    assert saved.status is None, saved.content
    [appended] = run(f"{F}append {name}\n{text}\n{F}\n")
    assert appended.status is None, appended.content


def test_a_placeholder_line_inside_real_content_is_still_refused(run: Run,
                                                                 workspace: Path) -> None:
    (workspace / "app.py").write_text(ORIGINAL)
    [result] = run(f"{F}save app.py\ndef main():\n    better()\n# ... rest of the code\n{F}\n")
    assert result.status is Status.ERROR
    assert "line 3 of the content, '# ... rest of the code', is a placeholder" in result.content
    assert (workspace / "app.py").read_text() == ORIGINAL
