"""Keeping tool output within what a model should read."""

from __future__ import annotations

from ...parsing.formats import fence_for

DEFAULT_LIMIT = 16_000


def cut_note(count: int, unit: str = "characters") -> str:
    """The one marker every tool uses where it left out the middle of something."""
    return f"[... {count} {unit} cut ...]"


def truncate_middle(text: str, limit: int = DEFAULT_LIMIT) -> str:
    """Keep the start and the end of ``text``; say how much was cut from the middle.

    The middle goes because the start shows what a command did and the end how it finished.
    """
    if len(text) <= limit:
        return text
    half = limit // 2
    cut = len(text) - 2 * half
    return f"{text[:half]}\n{cut_note(cut)}\n{text[-half:]}"


def fenced(label: str, text: str) -> str:
    """``label:`` and ``text`` in a code block whose fence cannot clash with the text."""
    fence = fence_for(text)
    body = text if text.endswith("\n") or not text else text + "\n"
    return f"{label}:\n{fence}\n{body}{fence}"
