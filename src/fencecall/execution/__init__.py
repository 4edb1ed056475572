"""Execution: the session and the one pipeline every tool call goes through."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._pipeline import CallRunner, ToolUse, execute_calls, resolve
    from ._session import Session
    from .confirm_policy import auto_no, auto_yes
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._pipeline": ("CallRunner", "ToolUse", "execute_calls", "resolve"),
        "._session": ("Session",),
        ".confirm_policy": ("auto_no", "auto_yes"),
    })

__all__ = [
    "CallRunner",
    "Session",
    "ToolUse",
    "auto_no",
    "auto_yes",
    "execute_calls",
    "resolve",
]
