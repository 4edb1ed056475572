"""The values the parsers produce: code blocks and tool calls, both immutable."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

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


class _NoArguments(Mapping[str, Any]):
    """The empty, immutable ``kwargs`` every call without named arguments shares: a reply of
    many small blocks makes thousands of calls, and a dict each is as many allocations that
    wake the cyclic garbage collector (which then walks every live object) far more often.
    It equals ``{}``, and pickles and copies as itself."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"

    def __reduce__(self) -> str:
        return "NO_ARGUMENTS"


NO_ARGUMENTS: Mapping[str, Any] = _NoArguments()


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
        # Parsers make one of these per call. The generated __init__ of a frozen dataclass
        # sets each field through object.__setattr__; the slots' own descriptors do the same
        # in half the time.
        _set_name(self, name)
        _set_argline(self, argline)
        _set_content(self, content)
        _set_kwargs(self, NO_ARGUMENTS if kwargs is None else kwargs)
        _set_call_id(self, call_id)
        _set_start(self, start)
        _set_format(self, format)
        _set_end(self, end)

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


(_set_name, _set_argline, _set_content, _set_kwargs, _set_call_id, _set_start, _set_format,
 _set_end) = (getattr(ToolCall, name).__set__ for name in ToolCall.__slots__)


def with_end(call: ToolCall, end: int) -> ToolCall:
    """``call``, its :attr:`~ToolCall.end` set to ``end`` in place: only for a call a reader
    has just made and no one else holds yet (the scanner learns where a call's text ends only
    after the reader has read it; a copy per call would cost as much as making it)."""
    _set_end(call, end)
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
    """

    kind: str
    message: str
    start: int
    line: int
    name: str | None = None
    codeblock: bool = False
