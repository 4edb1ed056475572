"""Execution: the session and the one pipeline every tool call goes through."""

from .confirm_policy import auto_no, auto_yes
from .pipeline import CallRunner, ToolUse, execute_calls, resolve
from .session import Session

__all__ = [
    "CallRunner",
    "Session",
    "ToolUse",
    "auto_no",
    "auto_yes",
    "execute_calls",
    "resolve",
]
