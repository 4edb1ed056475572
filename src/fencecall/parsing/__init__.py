"""Parsing: find tool calls in model text. Dependency-free and linear-time."""

from .api import StreamParser, parse_calls, parse_codeblocks
from .model import Codeblock, ToolCall, ToolFormat
from .render import UnrepresentableCall, render

__all__ = [
    "Codeblock",
    "StreamParser",
    "ToolCall",
    "ToolFormat",
    "UnrepresentableCall",
    "parse_calls",
    "parse_codeblocks",
    "render",
]
