"""The call syntaxes the scanner can be told to look for, besides fenced blocks.

A format that writes calls between an opening and a closing tag describes them with a
:class:`TagSyntax`; one whose calls start a line and end where brackets balance, with a
:class:`SpanSyntax`. The scanner does the rest the same way for all of them: it ignores them
inside code blocks and thinking, finds their ends in linear time while streaming, reports
the ones that cannot be read or never end, and reads on after them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Literal, Protocol

from .model import ToolCall


@dataclass(frozen=True, slots=True)
class Problem:
    """A call a reader could not make sense of. ``what`` completes the sentence "the call
    … on line N …" for the model (``"has JSON that could not be read: …"``)."""

    start: int
    label: str
    what: str
    name: str | None = None


Read = ToolCall | Problem


class EndFinder(Protocol):
    """Finds where a span ends, fed piece by piece; each character is looked at once."""

    def scan(self, text: str, pos: int) -> tuple[Literal["end", "more"], int]:
        """``("end", i)`` with ``i`` just past the span's end, or ``("more", len(text))``."""
        ...


@dataclass(frozen=True, slots=True)
class TagSyntax:
    """Calls between ``opener`` and ``closing`` (``<tool-use>…</tool-use>``).

    ``read(body, offset)`` turns the text between them (``offset`` is where it starts in the
    reply) into calls and problems, each call a new object (the scanner sets its ``end``
    in place). ``<![CDATA[…]]>`` sections in the body are skipped when
    looking for the closing tag, and an opener repeated before the closing tag supersedes the
    first (which was only mentioned in prose).
    """

    opener: str
    closing: str
    read: Callable[[str, int], Iterable[Read]]
    quick: Callable[[str, int, int], tuple[ToolCall, int] | None] | None = None
    """``quick(region, at, base)``: the call of a common, complete block at ``at`` read in
    one step (its ``end`` set), and where the block ends in ``region`` (``base`` is the
    region's offset); None to leave the block to the general reading. It must find exactly
    what that would."""


@dataclass(frozen=True, slots=True)
class SpanSyntax:
    """Calls that start a line with ``needle`` and match ``opener`` there, then run until
    ``end()`` says (``@name(id): {json}``, ``[name(arg=1)]``).

    ``read(match, text, start)`` gets the opener's match, the text from the match's end to the
    span's end, and the span's offset, and gives its calls (a span may hold several; each a
    new object, as for :class:`TagSyntax`) or the problem. ``label(match)`` names the call
    in diagnostics.
    """

    needle: str
    opener: re.Pattern[str]
    end: Callable[[], EndFinder]
    read: Callable[[re.Match[str], str, int], Iterable[Read]]
    label: Callable[[re.Match[str]], str]
    quick: Callable[[re.Match[str], str, int], tuple[ToolCall, int] | None] | None = None
    """``quick(match, region, base)``: the call of a common, complete span whose opener
    matched in ``region``, read in one step (its ``end`` set), and where the span ends; None
    to leave it to the general reading, as for :attr:`TagSyntax.quick`."""
