"""The values the parsers produce: code blocks, tool calls and diagnostics, all immutable.

Compiled with the scanner where a C compiler is present (see ``setup.py``): the scanner
makes one object per block or call, and compiled it makes them directly. Each class says
how it pickles, since a compiled frozen class cannot unpickle through its own
``__setattr__``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any

from ._no_arguments import NO_ARGUMENTS
from ._strings import COMPILED

FENCED = "markdown"
"""The format name of calls written as fenced code blocks, whichever format found them."""


@dataclass(frozen=True, slots=True)
class Codeblock:
    """One fenced code block found in a message.

    ``start`` is the offset of the opening fence's first backtick in the text that was parsed
    (thinking sections included), so callers can order blocks or map them back to the source.
    """

    lang: str
    content: str
    start: int = 0

    @property
    def path(self) -> str | None:
        """The file path a langtag names: ``save src/a.py`` or ``src/a.py`` → ``src/a.py``."""
        words = self.lang.split(maxsplit=1)
        if not words:
            return None
        candidate = words[-1] if len(words) == 2 else words[0]
        looks_like_path = "/" in candidate or ("." in candidate.strip(".") and " " not in candidate)
        return candidate if looks_like_path else None

    def __reduce__(self) -> tuple[type[Codeblock], tuple[str, str, int]]:
        return Codeblock, (self.lang, self.content, self.start)


@dataclass(frozen=True, slots=True, init=False)
class ToolCall:
    """A candidate tool call as written in a message, before any tool is looked up.

    ``argline`` is everything after the tool name on a markdown langtag (``save a b.txt`` →
    ``"a b.txt"``), kept unsplit because path arguments may hold spaces; ``args`` splits it.
    ``kwargs`` holds named arguments (``tool`` format JSON or XML parameters). ``format`` is
    the name of the syntax the call was written in.
    """

    name: str
    argline: str = ""
    content: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    call_id: str | None = None
    start: int = 0
    format: str = FENCED
    end: int = field(default=0, compare=False)
    """Where the call's text ends (past its closing fence line, tag or bracket), so a reply
    can be cut right after its first call; 0 where unknown. Not part of equality."""

    def __init__(self, name: str, argline: str = "", content: str = "",
                 kwargs: Mapping[str, Any] | None = None, call_id: str | None = None,
                 start: int = 0, format: str = FENCED, end: int = 0) -> None:
        # Compiled, these set the fields directly (parsers make one call object per call,
        # and the generated __init__ of a frozen dataclass goes through object.__setattr__
        # for each). As plain Python the frozen class refuses them, and
        # _init_through_slots below takes this method's place.
        self.name = name  # type: ignore[misc]
        self.argline = argline  # type: ignore[misc]
        self.content = content  # type: ignore[misc]
        self.kwargs = NO_ARGUMENTS if kwargs is None else kwargs  # type: ignore[misc]
        self.call_id = call_id  # type: ignore[misc]
        self.start = start  # type: ignore[misc]
        self.format = format  # type: ignore[misc]
        self.end = end  # type: ignore[misc]

    def __reduce__(self) -> tuple[type[ToolCall], tuple[Any, ...]]:
        return ToolCall, (self.name, self.argline, self.content, self.kwargs, self.call_id,
                          self.start, self.format, self.end)

    @property
    def is_codeblock(self) -> bool:
        """A fenced block: its langtag may name a tool, or it may be plain code."""
        return self.format == FENCED

    @property
    def args(self) -> tuple[str, ...]:
        """Whitespace-separated positional arguments from ``argline``."""
        return tuple(self.argline.split())

    def key(self) -> tuple[str, str, str, tuple[tuple[str, Any], ...], str | None]:
        """What the call *says*, ignoring where and how it was written (for comparisons)."""
        return (self.name, self.argline, self.content, tuple(sorted(self.kwargs.items())),
                self.call_id)


_SLOT_SETTERS: tuple[Callable[[ToolCall, Any], None], ...] = ()
"""As plain Python, the ``__set__`` of each field's slot, in field order (the slots' own
descriptors set a frozen field in half the time ``object.__setattr__`` takes)."""


def _init_through_slots(self: ToolCall, name: str, argline: str = "", content: str = "",
                        kwargs: Mapping[str, Any] | None = None, call_id: str | None = None,
                        start: int = 0, format: str = FENCED, end: int = 0) -> None:
    set_name, set_argline, set_content, set_kwargs, set_call_id, set_start, set_format, \
        set_end = _SLOT_SETTERS
    set_name(self, name)
    set_argline(self, argline)
    set_content(self, content)
    set_kwargs(self, NO_ARGUMENTS if kwargs is None else kwargs)
    set_call_id(self, call_id)
    set_start(self, start)
    set_format(self, format)
    set_end(self, end)


if not COMPILED:
    _SLOT_SETTERS = tuple(getattr(ToolCall, f.name).__set__ for f in fields(ToolCall))
    ToolCall.__init__ = _init_through_slots  # type: ignore[method-assign]


def with_end(call: ToolCall, end: int) -> ToolCall:
    """``call``, its :attr:`~ToolCall.end` set to ``end`` in place: only for a call a reader
    has just made and no one else holds yet (the scanner learns where a call's text ends only
    after the reader has read it; a copy per call would cost as much as making it)."""
    if _SLOT_SETTERS:
        _SLOT_SETTERS[-1](call, end)
    else:
        call.end = end  # type: ignore[misc]
    return call


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """Something in a reply that was meant as a call but will not run, said so that the model
    (and ``fencecall parse``) hears of it instead of the call being lost in silence.

    ``message`` is written for the model and names the call and its line ("the ```shell
    block opened on line 12 was never closed; nothing ran"). ``start`` is the offset where
    the call began, ``line`` its 1-based line, ``kind`` a short tag (``unclosed``,
    ``malformed``, ``hidden``), ``name`` the tool the call named, if it got that far.
    ``codeblock`` marks a fenced block, whose langtag may name no tool at all (plain code).
    For ``swallowed`` (a block inside another block), ``start`` is the outer block's.
    """

    kind: str
    message: str
    start: int
    line: int
    name: str | None = None
    codeblock: bool = False

    def __reduce__(self) -> tuple[type[Diagnostic], tuple[str, str, int, int, str | None, bool]]:
        return Diagnostic, (self.kind, self.message, self.start, self.line, self.name,
                            self.codeblock)
