"""Keeping tool output within what a model should read."""

from __future__ import annotations

from ...parsing.formats import fence_for

DEFAULT_LIMIT = 16_000


def cut_note(count: int, unit: str = "characters") -> str:
    """The one marker every tool uses where it left out the middle of something."""
    return f"[... {count} {unit} cut ...]"


def joined(head: str, cut: int, tail: str, unit: str = "characters") -> str:
    """``head`` and ``tail`` with the note that ``cut`` units between them were left out."""
    return f"{head}\n{cut_note(cut, unit)}\n{tail}"


def truncate_middle(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """Keep the start and the end of ``text``; say how much was cut from the middle.

    The middle goes because the start shows what a command did and the end how it finished.
    """
    if len(text) <= limit:
        return text
    half = limit // 2
    return joined(text[:half], len(text) - 2 * half, text[-half:])


def fenced(label: str, text: str) -> str:
    """``label:`` and ``text`` in a code block whose fence cannot clash with the text."""
    fence = fence_for(text)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{label}:\n{fence}\n{body}{fence}"
