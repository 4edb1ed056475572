"""Execution: the session and the one pipeline every tool call goes through."""

from .confirm import auto_no, auto_yes
from .pipeline import Runner, ToolUse, execute_calls, resolve
from .session import Session

__all__ = [
    "Runner",
    "Session",
    "ToolUse",
    "auto_no",
    "auto_yes",
    "execute_calls",
    "resolve",
]
