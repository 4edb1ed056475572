"""The call formats, one object each, kept in one table.

Adding a format is one new module here (an object satisfying :class:`CallFormat`) plus one
entry in :data:`FORMATS`; everything else (parsing, streaming, rendering, the system prompt,
the CLI's choices, native tool schemas) asks the format object.

The table names each format's class by module, and a format's module is imported when the
format is first looked up: listing the names (the CLI's ``--format`` choices) loads no
parser. The other names here (``MARKDOWN``, :class:`CallFormat`, ...) load when first used.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._markdown import fence_for, fenced
    from .base import CallFormat, CallScanner, UnrepresentableCall

    FormatLike = CallFormat | str

_CLASSES = {  # name: (module, class), in the order the CLI lists them
    "markdown": ("_markdown", "MarkdownFormat"),
    "xml": ("_xml", "XmlFormat"),
    "tool": ("_tool", "ToolTextFormat"),
    "hermes": ("_hermes", "HermesFormat"),
    "qwen3-coder": ("_qwen3_coder", "Qwen3CoderFormat"),
    "pythonic": ("_pythonic", "PythonicFormat"),
    "auto": ("_auto", "AutoFormat"),
}


class _Formats(Mapping[str, "CallFormat"]):
    """A read-only mapping of every format by name, each made at its first lookup (one
    object per format for the life of the process)."""

    __slots__ = ("_made",)

    def __init__(self) -> None:
        self._made: dict[str, CallFormat] = {}

    def __getitem__(self, name: str) -> CallFormat:
        made = self._made.get(name)
        if made is None:
            module, cls = _CLASSES[name]
            from importlib import import_module

            made = self._made.setdefault(
                name, getattr(import_module(f"{__name__}.{module}"), cls)())
        return made

    def __iter__(self) -> Iterator[str]:
        return iter(_CLASSES)

    def __len__(self) -> int:
        return len(_CLASSES)

    def __contains__(self, name: object) -> bool:
        return name in _CLASSES

    def __repr__(self) -> str:
        return f"FORMATS({', '.join(_CLASSES)})"


FORMATS: Mapping[str, CallFormat] = _Formats()
"""Every format by name, in the order the CLI lists them."""

if TYPE_CHECKING:
    MARKDOWN: CallFormat = FORMATS["markdown"]
    XML: CallFormat = FORMATS["xml"]
    TOOL: CallFormat = FORMATS["tool"]
    HERMES: CallFormat = FORMATS["hermes"]
    QWEN3_CODER: CallFormat = FORMATS["qwen3-coder"]
    PYTHONIC: CallFormat = FORMATS["pythonic"]
    AUTO: CallFormat = FORMATS["auto"]

_CONSTANTS = {"MARKDOWN": "markdown", "XML": "xml", "TOOL": "tool", "HERMES": "hermes",
              "QWEN3_CODER": "qwen3-coder", "PYTHONIC": "pythonic", "AUTO": "auto"}
_ELSEWHERE = {"CallFormat": "base", "CallScanner": "base", "UnrepresentableCall": "base",
              "fence_for": "_markdown", "fenced": "_markdown"}


def __getattr__(name: str) -> object:
    value: object
    if name in _CONSTANTS:
        value = FORMATS[_CONSTANTS[name]]
    elif name in _ELSEWHERE:
        from importlib import import_module

        value = getattr(import_module(f"{__name__}.{_ELSEWHERE[name]}"), name)
    elif name == "FormatLike":
        from .base import CallFormat

        value = CallFormat | str
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_CONSTANTS, *_ELSEWHERE, "FormatLike"})


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
    "fenced",
    "get_format",
]
