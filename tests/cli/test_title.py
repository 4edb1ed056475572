"""The terminal title shows the running tool, on a terminal only."""

from __future__ import annotations

import io
from pathlib import Path

from rich.console import Console

from fencecall.cli._title import POP, PUSH, show_running_tools, title_for
from fencecall.execution import Session, auto_yes
from fencecall.tools import Toolchain, ToolSpec

from ..support import F


def test_the_title_is_set_and_restored_around_a_call(tmp_path: Path) -> None:
    tools = Toolchain((ToolSpec("work", "Works.", execute=lambda inv: "done"),))
    for terminal in (True, False):
        out = io.StringIO()
        with Session(tools, workspace=tmp_path, confirm=auto_yes, sandbox="off") as session:
            show_running_tools(session.hooks, Console(file=out, force_terminal=terminal))
            [result] = list(session.execute(f"{F}work\n{F}\n"))
        assert result.content == "done"
        expected = f"{PUSH}\x1b]0;fencecall: running work\x07{POP}" if terminal else ""
        assert out.getvalue() == expected


def test_a_tool_name_cannot_smuggle_escapes_into_the_title() -> None:
    shown = title_for("evil\x07\x1b]0;pwned")
    assert shown == f"{PUSH}\x1b]0;fencecall: running evil???0?pwned\x07"
