"""fencecall: an agent runtime in which a model's plain text is the tool call."""

from .parsing import (
    CallFormat,
    Codeblock,
    StreamParser,
    ToolCall,
    UnrepresentableCall,
    get_format,
    parse_calls,
    parse_codeblocks,
    render,
)

__version__ = "0.1.0"

__all__ = [
    "CallFormat",
    "Codeblock",
    "StreamParser",
    "ToolCall",
    "UnrepresentableCall",
    "__version__",
    "get_format",
    "parse_calls",
    "parse_codeblocks",
    "render",
]
