"""The call formats, one object each, kept in one table.

Adding a format is one new module here (an object satisfying :class:`CallFormat`) plus one
entry in :data:`FORMATS`; everything else (parsing, streaming, rendering, the system prompt,
the CLI's choices, native tool schemas) asks the format object.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from .auto import AutoFormat
from .base import CallFormat, CallScanner, UnrepresentableCall
from .hermes import HermesFormat
from .markdown import MarkdownFormat, fence_for
from .pythonic import PythonicFormat
from .qwen3_coder import Qwen3CoderFormat
from .tool import ToolTextFormat
from .xml import XmlFormat

MARKDOWN: CallFormat = MarkdownFormat()
XML: CallFormat = XmlFormat()
TOOL: CallFormat = ToolTextFormat()
HERMES: CallFormat = HermesFormat()
QWEN3_CODER: CallFormat = Qwen3CoderFormat()
PYTHONIC: CallFormat = PythonicFormat()
AUTO: CallFormat = AutoFormat()

FORMATS: Mapping[str, CallFormat] = MappingProxyType(
    {fmt.name: fmt for fmt in (MARKDOWN, XML, TOOL, HERMES, QWEN3_CODER, PYTHONIC, AUTO)})
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
    "AUTO",
    "FORMATS",
    "HERMES",
    "MARKDOWN",
    "PYTHONIC",
    "QWEN3_CODER",
    "TOOL",
    "XML",
    "CallFormat",
    "CallScanner",
    "FormatLike",
    "UnrepresentableCall",
    "fence_for",
    "get_format",
]
