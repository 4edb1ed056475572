"""Asking the person at the terminal before a tool changes something."""

from __future__ import annotations

import sys

from rich.console import Console
from rich.markup import escape
from rich.syntax import Syntax

from ..execution import auto_no, auto_yes
from ..tools import ConfirmFunc, ConfirmRequest


def terminal_confirm(console: Console) -> ConfirmFunc:
    """Show the call (and its preview, a diff for file edits) and ask y/N."""

    def confirm(request: ConfirmRequest) -> bool:
        name = request.tool
        if request.preview:
            lexer = "diff" if request.preview.startswith(("---", "@@")) else (
                "bash" if name == "shell" else "python" if name == "ipython" else "text")
            console.print(Syntax(request.preview, lexer, word_wrap=True))
        try:
            answer = console.input(f"[bold yellow]{escape(request.question)}[/] \\[y/N] ")
        except EOFError:
            return False
        return answer.strip().lower() in ("y", "yes")

    return confirm


def choose_confirm(console: Console, *, yes: bool) -> ConfirmFunc:
    """``-y`` confirms everything; a terminal asks; anything else declines."""
    if yes:
        return auto_yes
    if sys.stdin.isatty():
        return terminal_confirm(console)
    return auto_no
