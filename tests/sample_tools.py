"""Small tools for exercising the tools and execution layers without touching the machine."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Literal

from fencecall.tools import Example, Parameter, ToolInvocation, ToolSpec


def add(a: int, b: int = 1, mode: Literal["plain", "loud"] = "plain") -> str:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number,
            which defaults to one.
        mode: How to say the result.
    """
    total = a + b
    return f"{total}!" if mode == "loud" else str(total)


def _echo(invocation: ToolInvocation) -> Iterator[str]:
    yield f"echo: {invocation.kwargs['text']}"
    yield f"args: {invocation.call.args}"


def _boom(invocation: ToolInvocation) -> str:
    raise RuntimeError("disk on fire")


def _interrupt(invocation: ToolInvocation) -> str:
    raise KeyboardInterrupt


ECHO = ToolSpec(
    "echo", "Echo text back.", execute=_echo, block_types=("echo", "say"),
    parameters=(Parameter("text"), Parameter("extra", required=False)),
    content_param="text", hints=frozenset({"read-only"}),
    examples=(Example.user("say hi"), Example.call(text="hi"), Example.result("echo: hi")),
)
WRITE = ToolSpec(
    "write", "Write a file.", execute=lambda inv: f"wrote {inv.kwargs['path']}",
    parameters=(Parameter("path"), Parameter("content")), content_param="content",
    argline_param="path", confirm=True, preview=lambda inv: f"+ {inv.kwargs['content']}",
)
BOOM = ToolSpec("boom", "Always fails.", execute=_boom)
INTERRUPT = ToolSpec("interrupt", "Simulates Ctrl-C.", execute=_interrupt)
ADD = ToolSpec.from_function(add, hints=frozenset({"math"}))
SECRET = ToolSpec("secret", "Hidden unless named.", execute=lambda inv: "s",
                  disabled_by_default=True)
MISSING = ToolSpec("missing", "Needs a binary that is not here.", execute=lambda inv: "m",
                   available=lambda: False)
NOTES = ToolSpec("notes", "Informational only.")

CATALOGUE = (ECHO, WRITE, BOOM, INTERRUPT, ADD, SECRET, MISSING, NOTES)

