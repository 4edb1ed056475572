"""Parsing: find tool calls in model text. Dependency-free and linear-time."""

from .compiled import prefer_current_sources

prefer_current_sources()  # before any compiled module is imported (see .compiled)

from .api import Parsed, StreamParser, parse, parse_calls, parse_codeblocks, render
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
from .model import Codeblock, Diagnostic, ToolCall

__all__ = [
    "FORMATS",
    "MARKDOWN",
    "TOOL",
    "XML",
    "CallFormat",
    "Codeblock",
    "Diagnostic",
    "FormatLike",
    "Parsed",
    "StreamParser",
    "ToolCall",
    "UnrepresentableCall",
    "get_format",
    "parse",
    "parse_calls",
    "parse_codeblocks",
    "render",
]
