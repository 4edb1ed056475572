"""Parsing: find tool calls in model text. Dependency-free and linear-time."""

from .api import StreamParser, parse_calls, parse_codeblocks, render
from .formats import (
    FORMATS,
    MARKDOWN,
    TOOL,
    XML,
    CallFormat,
    FormatLike,
    UnrepresentableCall,
    get_format,
)
from .model import Codeblock, ToolCall

__all__ = [
    "FORMATS",
    "MARKDOWN",
    "TOOL",
    "XML",
    "CallFormat",
    "Codeblock",
    "FormatLike",
    "StreamParser",
    "ToolCall",
    "UnrepresentableCall",
    "get_format",
    "parse_calls",
    "parse_codeblocks",
    "render",
]
