"""Execution: the session and the one pipeline every tool call goes through."""

from ._pipeline import CallRunner, ToolUse, execute_calls, resolve
from ._session import Session
from .confirm_policy import auto_no, auto_yes

__all__ = [
    "CallRunner",
    "Session",
    "ToolUse",
    "auto_no",
    "auto_yes",
    "execute_calls",
    "resolve",
]
