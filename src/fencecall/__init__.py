"""fencecall: an agent runtime in which a model's plain text is the tool call."""

from .parsing import (
    Codeblock,
    StreamParser,
    ToolCall,
    ToolFormat,
    UnrepresentableCall,
    parse_calls,
    parse_codeblocks,
    render,
)

__version__ = "0.1.0"

__all__ = [
    "Codeblock",
    "StreamParser",
    "ToolCall",
    "ToolFormat",
    "UnrepresentableCall",
    "__version__",
    "parse_calls",
    "parse_codeblocks",
    "render",
]
