"""The call formats, one object each, kept in one table.

Adding a format is one new module here (an object satisfying :class:`CallFormat`) plus one
entry in :data:`FORMATS`; everything else (parsing, streaming, rendering, the system prompt,
the CLI's choices, native tool schemas) asks the format object.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .base import CallFormat, CallScanner, UnrepresentableCall
from .markdown import MarkdownFormat, fence_for
from .tool import ToolTextFormat
from .xml import XmlFormat

MARKDOWN: CallFormat = MarkdownFormat()
XML: CallFormat = XmlFormat()
TOOL: CallFormat = ToolTextFormat()

FORMATS: Mapping[str, CallFormat] = MappingProxyType(
    {fmt.name: fmt for fmt in (MARKDOWN, XML, TOOL)})
"""Every format by name, in the order the CLI lists them."""

FormatLike = CallFormat | str


def get_format(fmt: FormatLike) -> CallFormat:
    """The format called ``fmt`` (a format object is returned as it is)."""
    if not isinstance(fmt, str):
        return fmt
    try:
        return FORMATS[fmt]
    except KeyError:
        known = ", ".join(FORMATS)
        raise ValueError(f"unknown format {fmt!r}; known formats: {known}") from None


__all__ = [
    "FORMATS",
    "MARKDOWN",
    "TOOL",
    "XML",
    "CallFormat",
    "CallScanner",
    "FormatLike",
    "UnrepresentableCall",
    "fence_for",
    "get_format",
]
