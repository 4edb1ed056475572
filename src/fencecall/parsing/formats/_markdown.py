"""The markdown format: fenced code blocks whose langtag names the tool."""

from __future__ import annotations

import re

from .._scanner import Scanner
from ..model import FENCED, ToolCall
from .base import (
    BlockCalls,
    CallScanner,
    UnrepresentableCall,
    check_argline,
    check_name,
    check_text,
)

_LEADING_TICKS = re.compile(r"^[ \t]*(`+)", re.M)
_TICKS = re.compile(r"(`+)")


def fence_for(content: str, *, anywhere: bool = False) -> str:
    """The fence for ``content``: three backticks, or more when the content holds lines that
    start with backticks.

    The fence is longer than any backtick run that starts a content line, so those lines can
    never close the block; even lengths from six up are skipped because they read as glued.
    With ``anywhere``, runs inside lines count too: for markdown viewers that may not hold
    to the rule that only a line's start closes a block.
    """
    runs = (_TICKS if anywhere else _LEADING_TICKS).finditer(content)
    longest = max((len(m.group(1)) for m in runs), default=0)
    length = max(3, longest + 1)
    if length >= 6 and length % 2 == 0:
        length += 1
    return "`" * length


def fenced(text: str, info: str = "", *, anywhere: bool = False) -> str:
    """``text`` in a code block (its info string ``info``) that its lines cannot close (see
    :func:`fence_for`), ending on a line of its own."""
    fence = fence_for(text, anywhere=anywhere)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{fence}{info}\n{body}{fence}"


def render_block(call: ToolCall) -> str:
    """``call`` as a fenced block: the langtag holds the name and the argument line."""
    if call.kwargs:
        raise UnrepresentableCall("markdown blocks cannot hold named arguments")
    check_name(call.name)
    check_argline(call.argline)
    check_text(call.content)
    fence = fence_for(call.content)
    langtag = f"{call.name} {call.argline}" if call.argline else call.name
    return f"{fence}{langtag}\n{call.content}\n{fence}"


class MarkdownFormat:
    """```` ```shell ````: every block with a langtag is a candidate call."""

    name = FENCED
    native = False
    named_arguments = False
    by_langtag = True
    preamble = (
        "You can use tools by writing a fenced code block whose language tag names the tool, "
        "followed by its arguments, e.g. ```save path/to/file.py. The block runs once it is "
        "closed, and its result comes back to you as a system message. Blocks without a tool "
        "name are just code. Use a longer fence (````) when the content itself holds fences."
    )

    def scanner(self) -> CallScanner:
        return BlockCalls(Scanner(blocks="call"))

    def render(self, call: ToolCall) -> str:
        return render_block(call)
