"""Parsing: find tool calls in model text. Dependency-free and linear-time.

The names below load when first used (``from fencecall.parsing import parse_calls``): the
package alone imports no parser, so that the command line can name the formats
(:data:`FORMATS` lists them without loading them) and start fast.
"""

from ._compiled import active as is_compiled
from ._compiled import prefer_current_sources

prefer_current_sources()  # before any compiled module is imported (see ._compiled)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._api import Parsed, StreamParser, parse, parse_calls, parse_codeblocks, render
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

_LAZY = {
    "FORMATS": "formats", "MARKDOWN": "formats", "TOOL": "formats", "XML": "formats",
    "CallFormat": "formats", "FormatLike": "formats", "UnrepresentableCall": "formats",
    "get_format": "formats",
    "Parsed": "_api", "StreamParser": "_api", "parse": "_api", "parse_calls": "_api",
    "parse_codeblocks": "_api", "render": "_api",
    "Codeblock": "model", "Diagnostic": "model", "ToolCall": "model",
}


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from importlib import import_module

    value = getattr(import_module(f"{__name__}.{module}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})


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
    "is_compiled",
    "parse",
    "parse_calls",
    "parse_codeblocks",
    "render",
]
