"""Keeping tool output within what a model should read."""

from __future__ import annotations

from ...parsing.formats import fenced as fenced_block

DEFAULT_LIMIT = 16_000


def cut_note(count: int, unit: str = "characters") -> str:
    """The one marker every tool uses where it left out the middle of something."""
    return f"[... {count} {unit} cut ...]"


def joined(head: str, cut: int, tail: str, unit: str = "characters") -> str:
    """``head`` and ``tail`` with the note that ``cut`` units between them were left out."""
    return f"{head}\n{cut_note(cut, unit)}\n{tail}"


def fenced(label: str, text: str) -> str:
    """``label:`` and ``text`` in a code block whose fence cannot clash with the text."""
    return f"{label}:\n{fenced_block(text)}"
