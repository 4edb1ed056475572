"""Confirmation: asking the user before a tool changes something.

The session holds a confirm function; tools declare whether a call needs it. The CLI installs
an interactive prompt, ``-y`` installs :func:`auto_yes`, and without a terminal the default
is :func:`auto_no`, so nothing that changes files or runs commands happens unattended.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .tooluse import ToolInvocation


@dataclass(frozen=True, slots=True)
class ConfirmRequest:
    """What the user is asked: which call, a one-line question, and a preview (a diff…)."""

    invocation: ToolInvocation
    question: str
    preview: str | None = None


ConfirmFunc = Callable[[ConfirmRequest], bool]


def auto_yes(request: ConfirmRequest) -> bool:
    """Confirm everything (``-y``)."""
    return True


def auto_no(request: ConfirmRequest) -> bool:
    """Decline everything that needs confirmation (the non-interactive default)."""
    return False
