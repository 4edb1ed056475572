"""Text as an editor shows it: thinking told apart from the reply, and any text fenced so
that markdown cannot change how it reads."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from ..parsing.formats import fenced as fenced_block

Kind = Literal["message", "thought"]

_OPEN = ("<think>", "<thinking>")
_CLOSE = {"<think>": "</think>", "<thinking>": "</thinking>"}


@dataclass(slots=True)
class ThinkingSplitter:
    """Splits a streamed reply into its message and its thinking (``<think>…</think>``,
    ``<thinking>…</thinking>``, as the parser skips them). A tag cut between two chunks is
    held back until the next one tells what it is."""

    _closing: str | None = None
    _held: str = field(default="")

    def feed(self, chunk: str) -> list[tuple[Kind, str]]:
        text, self._held = self._held + chunk, ""
        pieces: list[tuple[Kind, str]] = []
        while text:
            tags = (self._closing,) if self._closing else _OPEN
            kind: Kind = "thought" if self._closing else "message"
            found = [(text.find(tag), tag) for tag in tags if text.find(tag) >= 0]
            if found:
                start, tag = min(found)
                pieces.append((kind, text[:start]))
                text = text[start + len(tag):]
                self._closing = None if self._closing else _CLOSE[tag]
                continue
            keep = _partial_tag(text, tags)
            pieces.append((kind, text[:len(text) - keep]))
            self._held = text[len(text) - keep:]
            break
        return [(kind, piece) for kind, piece in pieces if piece]

    def flush(self) -> list[tuple[Kind, str]]:
        """What was held back, at the end of a reply."""
        held, self._held = self._held, ""
        return [("thought" if self._closing else "message", held)] if held else []


def _partial_tag(text: str, tags: tuple[str, ...]) -> int:
    """The length of the longest end of ``text`` that starts one of ``tags``."""
    for size in range(min(len(text), max(map(len, tags)) - 1), 0, -1):
        if any(tag.startswith(text[-size:]) for tag in tags):
            return size
    return 0


def fenced(text: str, info: str = "") -> str:
    """``text`` in a code fence longer than any run of backticks in it, inside lines too, so
    that an editor's markdown viewer, however lax, shows it as it is."""
    return fenced_block(text, info, anywhere=True)
