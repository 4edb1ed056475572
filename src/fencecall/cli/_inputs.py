"""Reading the files a user points the CLI at, with clear errors instead of tracebacks."""

from __future__ import annotations

import sys
from pathlib import Path

from ..errors import UserError


class InputError(UserError):
    """A file the user named cannot be used; the message says why."""


def read_text(name: str) -> str:
    """Read a file (``-`` for standard input) as UTF-8, replacing undecodable bytes.

    Binary input is not refused: a NUL byte earns a warning on stderr, and parsing goes on.
    """
    if name == "-":
        data = sys.stdin.buffer.read()
    else:
        path = Path(name)
        if not path.exists():
            raise InputError(f"{name}: no such file")
        if path.is_dir():
            raise InputError(f"{name}: is a directory, expected a file")
        try:
            data = path.read_bytes()
        except OSError as err:
            raise InputError(f"{name}: cannot be read ({err.strerror})") from err
    if b"\x00" in data:
        print(f"fencecall: warning: {name} looks binary; parsing it as text", file=sys.stderr)
    return data.decode("utf-8", errors="replace")


def piped_prompt(*, resuming: bool) -> str:
    """The prompt piped on standard input. An empty one continues a resumed conversation
    and is refused otherwise: a run that was given nothing to do must not pass for done."""
    prompt = sys.stdin.read().strip()
    if not prompt and not resuming:
        raise InputError("no prompt: standard input was empty (give a PROMPT, pipe one, or "
                         "--resume a conversation)")
    return prompt
