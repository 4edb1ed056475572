"""Confirmation policies for calls that need the user's yes.

The session holds a confirm function; tools declare whether a call needs it. The CLI installs
an interactive prompt, ``-y`` installs :func:`auto_yes`, and without a terminal the default
is :func:`auto_no`, so nothing that changes files or runs commands happens unattended.
"""

from __future__ import annotations

from ..tools.tool_context import ConfirmRequest


def auto_yes(request: ConfirmRequest) -> bool:
    """Confirm everything (``-y``)."""
    return True


def auto_no(request: ConfirmRequest) -> bool:
    """Decline everything that needs confirmation (the non-interactive default)."""
    return False
