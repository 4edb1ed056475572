"""The terminal's title says which tool is running, in the interactive chat.

Set only on a real terminal, pushed on xterm's title stack before a call and popped after
it, so the user's own title comes back; the tool's name is reduced to safe characters, since
a title is written with an escape sequence.
"""

from __future__ import annotations

import re

from rich.console import Console

from ..tools import HookRegistry
from ..tools.hook_points import TOOL_POST_EXECUTE, TOOL_PRE_EXECUTE, ToolPostExecute, ToolPreExecute

_UNSAFE = re.compile(r"[^A-Za-z0-9_.\-]")
PUSH, POP = "\x1b[22;0t", "\x1b[23;0t"


def title_for(tool: str) -> str:
    """The escape sequences that push the current title and show ``tool`` running."""
    return f"{PUSH}\x1b]0;fencecall: running {_UNSAFE.sub('?', tool)[:60]}\x07"


def show_running_tools(hooks: HookRegistry, console: Console) -> None:
    """Set the title around every tool call (nothing happens off a terminal)."""
    if not console.is_terminal:
        return

    def running(data: ToolPreExecute) -> None:
        console.file.write(title_for(data.invocation.spec.name))
        console.file.flush()

    def done(data: ToolPostExecute) -> None:
        console.file.write(POP)
        console.file.flush()

    hooks.add(TOOL_PRE_EXECUTE, running, priority=1000, name="terminal-title")
    hooks.add(TOOL_POST_EXECUTE, done, priority=-1000, name="terminal-title")
