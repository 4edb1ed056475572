"""Entry points: parse a whole text, or a stream of chunks, into code blocks or tool calls."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ._scanner import Scanner
from .formats import MARKDOWN, FormatLike, get_format
from .formats.base import read_whole
from .model import Codeblock, Diagnostic, ToolCall


@dataclass(frozen=True, slots=True)
class Parsed:
    """What a reply holds: the calls to run, and what was meant as a call but cannot run."""

    calls: list[ToolCall]
    diagnostics: list[Diagnostic]


def parse_codeblocks(text: str, *, streaming: bool = False) -> list[Codeblock]:
    """All fenced code blocks in ``text``, in order.

    With ``streaming=True`` the text is taken as a prefix of a reply still being written: a
    block is returned only once the line after its closing fence has begun.
    """
    scanner = Scanner()
    found = scanner.feed(text) if streaming else scanner.parse(text)
    return [item for item in found if isinstance(item, Codeblock)]


def parse_calls(text: str, fmt: FormatLike = MARKDOWN, *,
                streaming: bool = False) -> list[ToolCall]:
    """Candidate tool calls in ``text`` written in ``fmt``, in order of position.

    For markdown every block with a langtag is a candidate (its first word the name); which
    names are tools is the registry's business. The ``tool`` format also reads markdown blocks.
    """
    scanner = get_format(fmt).scanner()
    return scanner.feed(text) if streaming else read_whole(scanner, text)


def parse(text: str, fmt: FormatLike = MARKDOWN) -> Parsed:
    """The calls in the complete reply ``text`` and the diagnostics for those that will not
    run (malformed, never closed, hidden in unclosed thinking)."""
    scanner = get_format(fmt).scanner()
    calls = read_whole(scanner, text)
    return Parsed(calls, list(scanner.diagnostics))


def render(call: ToolCall, fmt: FormatLike) -> str:
    """``call`` written in ``fmt``; :class:`UnrepresentableCall` when it cannot be."""
    return get_format(fmt).render(call)


class StreamParser:
    """Yields each tool call of a streamed reply as soon as it is certain.

    Feed it the chunks a model streams; every character is scanned once, so a reply of N
    characters costs O(N) whatever the chunk sizes. The calls returned by all ``feed`` calls
    plus ``finish`` equal ``parse_calls`` on the whole text.
    """

    feed: Callable[[str], list[ToolCall]]
    """``feed(chunk)``: add a chunk; return the calls it completed. (The format scanner's own
    method: a model streams many small chunks, and each call in between costs.)"""

    finish: Callable[[], list[ToolCall]]
    """``finish()``: end the stream; return the calls completed by its end."""

    def __init__(self, fmt: FormatLike = MARKDOWN):
        self.format = get_format(fmt)
        self._scanner = self.format.scanner()
        self.feed = self._scanner.feed
        self.finish = self._scanner.finish

    @property
    def diagnostics(self) -> list[Diagnostic]:
        """What was meant as a call but will not run, found so far (complete after
        :meth:`finish`)."""
        return list(self._scanner.diagnostics)
