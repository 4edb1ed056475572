"""Entry points: parse a whole text, or a stream of chunks, into code blocks or tool calls."""

from __future__ import annotations

from typing import Literal

from .model import Codeblock, ToolCall, ToolFormat
from .scanner import Found, Scanner


def _blocks_as(fmt: ToolFormat) -> Literal["call", "none"]:
    return "none" if fmt is ToolFormat.XML else "call"


def _calls(found: list[Found]) -> list[ToolCall]:
    return [item for item in found if isinstance(item, ToolCall)]


def parse_codeblocks(text: str, *, streaming: bool = False) -> list[Codeblock]:
    """All fenced code blocks in ``text``, in order.

    With ``streaming=True`` the text is taken as a prefix of a reply still being written: a
    block is returned only once the line after its closing fence has begun.
    """
    scanner = Scanner(ToolFormat.MARKDOWN)
    found = scanner.feed(text)
    if not streaming:
        found += scanner.finish()
    return [item for item in found if isinstance(item, Codeblock)]


def parse_calls(text: str, fmt: ToolFormat | str = ToolFormat.MARKDOWN, *,
                streaming: bool = False) -> list[ToolCall]:
    """Candidate tool calls in ``text`` written in ``fmt``, in order of position.

    For markdown every block with a langtag is a candidate (its first word the name); which
    names are tools is the registry's business. The ``tool`` format also reads markdown blocks.
    """
    fmt = ToolFormat(fmt)
    scanner = Scanner(fmt, blocks=_blocks_as(fmt))
    found = scanner.feed(text)
    if not streaming:
        found += scanner.finish()
    return _calls(found)


class StreamParser:
    """Yields each tool call of a streamed reply as soon as it is certain.

    Feed it the chunks a model streams; every character is scanned once, so a reply of N
    characters costs O(N) whatever the chunk sizes. The calls returned by all ``feed`` calls
    plus ``finish`` equal ``parse_calls`` on the whole text.
    """

    def __init__(self, fmt: ToolFormat | str = ToolFormat.MARKDOWN):
        self.format = ToolFormat(fmt)
        self._scanner = Scanner(self.format, blocks=_blocks_as(self.format))

    def feed(self, chunk: str) -> list[ToolCall]:
        """Add a chunk; return the calls it completed."""
        return _calls(self._scanner.feed(chunk))

    def finish(self) -> list[ToolCall]:
        """End the stream; return the calls completed by its end."""
        return _calls(self._scanner.finish())
