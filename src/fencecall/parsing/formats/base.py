"""The protocol every call format implements, and checks the renderers share.

A format is one object: how to find its calls (whole or streamed), how to write a call in it,
how to teach it in a system prompt, and whether its calls also travel natively. Nothing
outside ``parsing/`` asks which format it holds; it asks the format.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Protocol, cast

from .._scanner import Scanner
from ..model import Diagnostic, ToolCall
from ..xmlcalls import NAME

_NAME_RE = re.compile(NAME)


class UnrepresentableCall(ValueError):
    """The call holds something the target format cannot express."""


class CallScanner(Protocol):
    """An incremental finder of calls: each character is fed once.

    ``diagnostics`` lists, in order, what was found so far that was meant as a call but
    cannot run (malformed, unclosed, hidden); the end of the text may add some in
    ``finish``.
    """

    @property
    def diagnostics(self) -> list[Diagnostic]: ...

    def feed(self, chunk: str) -> list[ToolCall]:
        """Add text; return the calls it completed."""
        ...

    def finish(self) -> list[ToolCall]:
        """End the text; return the calls its end completed."""
        ...


def read_whole(scanner: CallScanner, text: str) -> list[ToolCall]:
    """The calls in the whole ``text``: ``feed`` then ``finish``, or in one pass by the
    scanner's own ``parse(text)`` where it has one (the built-in scanners do: a text known
    to be whole needs no line held back for the next chunk)."""
    parse: Callable[[str], list[ToolCall]] | None = getattr(scanner, "parse", None)
    if parse is not None:
        return parse(text)
    return scanner.feed(text) + scanner.finish()


class CallFormat(Protocol):
    """How a model writes tool calls.

    ``native``: calls also travel as the provider's native function calls, so the provider
    is sent the tools' schemas. ``named_arguments``: a call carries its arguments as one
    named mapping, not as a langtag plus a body. ``by_langtag``: a call names its tool by a
    code block's langtag (a tool's block type) rather than by the tool's name.
    """

    @property
    def name(self) -> str: ...

    @property
    def native(self) -> bool: ...

    @property
    def named_arguments(self) -> bool: ...

    @property
    def by_langtag(self) -> bool: ...

    @property
    def preamble(self) -> str:
        """The system-prompt paragraph that teaches a model this syntax."""
        ...

    def scanner(self) -> CallScanner:
        """A fresh scanner for one text or stream."""
        ...

    def render(self, call: ToolCall) -> str:
        """``call`` written in this format; :class:`UnrepresentableCall` when it cannot be."""
        ...


def is_name(text: str) -> bool:
    """Whether ``text`` can be a tool, tag or attribute name."""
    return _NAME_RE.fullmatch(text) is not None


def check_name(name: str) -> None:
    if not is_name(name):
        raise UnrepresentableCall(f"{name!r} is not a valid tool name")


def check_argline(argline: str) -> None:
    if argline != argline.strip() or any(c in argline for c in "\n\r`"):
        raise UnrepresentableCall(f"argument line {argline!r} cannot be written on one line")


class BlockCalls:
    """Adapts the shared :class:`~fencecall.parsing._scanner.Scanner` to :class:`CallScanner`.

    The scanner must not report code blocks (``blocks="call"`` or ``"none"``): then all it
    reports are tool calls, and its own ``feed``, ``finish`` and ``parse`` are passed on as
    they are, so a streamed chunk costs no call in between.
    """

    __slots__ = ("_scanner", "feed", "finish", "parse")

    feed: Callable[[str], list[ToolCall]]
    finish: Callable[[], list[ToolCall]]
    parse: Callable[[str], list[ToolCall]]

    def __init__(self, scanner: Scanner):
        if scanner.reports_codeblocks:
            raise ValueError("BlockCalls needs a scanner that reports tool calls only")
        self._scanner = scanner
        # the types as strings: subscribing Callable at run time builds an alias per call
        self.feed = cast("Callable[[str], list[ToolCall]]", scanner.feed)
        self.finish = cast("Callable[[], list[ToolCall]]", scanner.finish)
        self.parse = cast("Callable[[str], list[ToolCall]]", scanner.parse)

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self._scanner.diagnostics


def check_text(text: str) -> None:
    """Block and tag texts are read with ``\r`` as a line end, so one inside would be lost."""
    if "\r" in text:
        raise UnrepresentableCall("the text holds a carriage return, which is read as a line "
                                  "end; this format cannot carry it")


def check_named_only(call: ToolCall, fmt: str) -> None:
    """Formats of named arguments cannot hold a langtag's words or a block's body."""
    if call.argline or call.content:
        raise UnrepresentableCall(f"{fmt} calls hold named arguments only; map args/content "
                                  "to parameters first")
