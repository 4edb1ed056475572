"""Entry points: parse a whole text, or a stream of chunks, into code blocks or tool calls."""

from __future__ import annotations

from collections.abc import Iterable

from .model import Codeblock, ToolCall, ToolFormat
from .scanner import Found, Scanner


def _as_calls(found: Iterable[Found]) -> list[ToolCall]:
    calls = []
    for item in found:
        if isinstance(item, ToolCall):
            calls.append(item)
            continue
        words = item.lang.split(maxsplit=1)
        if words:
            argline = words[1] if len(words) == 2 else ""
            calls.append(ToolCall(words[0], argline, item.content, start=item.start))
    return calls


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
    scanner = Scanner(fmt, emit_blocks=fmt is not ToolFormat.XML)
    found = scanner.feed(text)
    if not streaming:
        found += scanner.finish()
    return _as_calls(found)


class StreamParser:
    """Yields each tool call of a streamed reply as soon as it is certain.

    Feed it the chunks a model streams; every character is scanned once, so a reply of N
    characters costs O(N) whatever the chunk sizes. The calls returned by all ``feed`` calls
    plus ``finish`` equal ``parse_calls`` on the whole text.
    """

    def __init__(self, fmt: ToolFormat | str = ToolFormat.MARKDOWN):
        self.format = ToolFormat(fmt)
        self._scanner = Scanner(self.format, emit_blocks=self.format is not ToolFormat.XML)

    def feed(self, chunk: str) -> list[ToolCall]:
        """Add a chunk; return the calls it completed."""
        return _as_calls(self._scanner.feed(chunk))

    def finish(self) -> list[ToolCall]:
        """End the stream; return the calls completed by its end."""
        return _as_calls(self._scanner.finish())
