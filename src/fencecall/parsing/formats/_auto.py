"""The auto format: find out, per reply, which syntax the model wrote its calls in.

One scanner per candidate syntax reads the reply: markdown blocks, the xml tags,
``@name(id): {json}`` lines, ``<tool_call>`` tags and bare ``<function=…>`` calls (hermes and
qwen3-coder share one reader, so one scanner serves both) and pythonic lists. The reply is
taken to be written in the syntax whose first call starts earliest, and from then on only that
scanner's calls and diagnostics count. A malformed call is a call for this purpose (the model
meant it); an opener that is never closed, or thinking that hides a call, is weaker evidence (a
``<tool-use>`` mentioned in prose never closes either) and decides only when no candidate found
anything else. Ties go to the candidate listed first. Each call's ``format`` names the syntax
it was written in.

While streaming, calls are held back until the choice is certain: when the leading
candidate's first call is known and no other candidate can still report anything that starts
earlier. A candidate can still report something only from the start of what it holds open
(a block, thinking, a tag, a span), or from the end of the lines it has scanned. The choice
depends on the text alone, not on how it was chunked, so streaming yields exactly the calls of
parsing the whole text. auto teaches and renders markdown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from .._scanner import Found, Scanner
from ..model import Diagnostic, ToolCall
from ._markdown import MarkdownFormat
from ._pythonic import SPANS as PYTHONIC_SPANS
from ._tool import AT_CALLS
from ._toolcall import function_span, tool_call_tag
from ._xml import TAGS as XML_TAGS
from .base import CallScanner

NAME = "auto"
_TOOL_CALL_TAGS = (tool_call_tag(None),)  # calls named by the style their body is written in
_FUNCTIONS = (function_span(None),)


@dataclass(slots=True)
class _Candidate:
    """One syntax's scanner and what it has found so far."""

    scanner: Scanner
    calls: list[ToolCall] = field(default_factory=list)
    first: float = math.inf
    """Where its earliest call or malformed call starts (inf: none yet)."""
    diagnostics_seen: int = 0

    def take(self, found: list[Found]) -> None:
        if not found and len(self.scanner.diagnostics) == self.diagnostics_seen:
            return
        calls = _calls(found)
        self.calls += calls
        diagnostics = self.scanner.diagnostics[self.diagnostics_seen :]
        self.diagnostics_seen += len(diagnostics)
        starts = [c.start for c in calls] + [d.start for d in diagnostics if d.kind == "malformed"]
        self.first = min([self.first, *starts])

    def bound(self, final: bool) -> float:
        """No call or malformed call it will ever report starts before this."""
        return self.first if final else min(self.first, self.scanner.settled)

    def weak_first(self) -> float:
        return min((d.start for d in self.scanner.diagnostics), default=math.inf)


def _candidates() -> list[_Candidate]:
    return [_Candidate(Scanner(blocks="call")),
            _Candidate(Scanner(blocks="none", tags=XML_TAGS)),
            _Candidate(Scanner(blocks="none", spans=(AT_CALLS,))),
            _Candidate(Scanner(blocks="none", tags=_TOOL_CALL_TAGS, spans=_FUNCTIONS)),
            _Candidate(Scanner(blocks="none", spans=PYTHONIC_SPANS))]


def _winner(candidates: list[_Candidate], final: bool) -> _Candidate | None:
    """The candidate the reply is written in, once that is certain; None until then."""
    best = min(candidates, key=lambda c: c.bound(final))  # the first listed of equals
    if best.first != math.inf and best.bound(final) == best.first:
        return best
    if not final:
        return None
    weakest = min(candidates, key=_Candidate.weak_first)
    return weakest if weakest.weak_first() != math.inf else None


class AutoScanner:
    """Feeds every candidate until one is chosen, then only that one."""

    __slots__ = ("_candidates", "_chosen")

    def __init__(self) -> None:
        self._candidates = _candidates()
        self._chosen: _Candidate | None = None

    @property
    def diagnostics(self) -> list[Diagnostic]:
        return self._chosen.scanner.diagnostics if self._chosen is not None else []

    def feed(self, chunk: str) -> list[ToolCall]:
        if self._chosen is not None:
            return _calls(self._chosen.scanner.feed(chunk))
        for candidate in self._candidates:
            candidate.take(candidate.scanner.feed(chunk))
        if all(candidate.first == math.inf for candidate in self._candidates):
            return []  # nothing to choose by yet
        return self._choose(final=False)

    def finish(self) -> list[ToolCall]:
        if self._chosen is not None:
            return _calls(self._chosen.scanner.finish())
        for candidate in self._candidates:
            candidate.take(candidate.scanner.finish())
        return self._choose(final=True)

    def parse(self, text: str) -> list[ToolCall]:
        if self._chosen is not None:
            return self.feed(text) + self.finish()
        for candidate in self._candidates:
            candidate.take(candidate.scanner.parse(text))
        return self._choose(final=True)

    def _choose(self, final: bool) -> list[ToolCall]:
        """The calls held back so far, once the choice is made."""
        chosen = _winner(self._candidates, final)
        if chosen is None:
            return []
        self._chosen, self._candidates = chosen, []
        calls, chosen.calls = chosen.calls, []
        return calls


class AutoFormat(MarkdownFormat):
    """Reads whichever syntax the reply uses; teaches and renders markdown."""

    name = NAME

    def scanner(self) -> CallScanner:
        return AutoScanner()


def _calls(found: list[Found]) -> list[ToolCall]:
    return [item for item in found if isinstance(item, ToolCall)]
