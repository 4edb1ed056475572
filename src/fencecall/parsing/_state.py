"""What a scanner holds open, and what it tells the model about what will not run.

The open items (a block, thinking, a call tag, a call span) and the diagnostics about them: a
block or call still open at the end, a block swallowed by another, a file block read as
closing at an ambiguous bare fence, a call that cannot be read.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum, auto
from typing import Final

from ._fences import (
    MARKERS,
    Blocks,
    Fence,
    Found,
    closed_block,
    glued_thinking,
    is_langtag,
    opens_container,
)
from ._kept import KeptText
from ._needles import NeedleGroups, needle_groups
from ._syntax import EndFinder, Problem, SpanSyntax, TagSyntax
from .model import Diagnostic, ToolCall, with_end

THINK_TAGS = ("<think>", "<thinking>")
MAX_REREADS = 8
"""How often the end of a reply is read again after a broken call, or after a file block
that closes at an ambiguous fence: each is a pass over the rest, so a reply of many costs a
bounded number of passes, not one each."""


class _Mode(Enum):
    OUTSIDE = auto()
    FENCE = auto()
    THINK = auto()
    TAG = auto()
    SPAN = auto()


# The modes as plain module globals: looking a member up on an Enum class goes through its
# metaclass (about ten times the cost of a global), and the scanner asks for one per line.
OUTSIDE: Final = _Mode.OUTSIDE
FENCE: Final = _Mode.FENCE
THINK: Final = _Mode.THINK
TAG: Final = _Mode.TAG
SPAN: Final = _Mode.SPAN


@dataclass(slots=True)
class OpenTag:
    syntax: TagSyntax
    start: int
    body: int
    line: int
    in_cdata: bool = False


@dataclass(slots=True)
class OpenSpan:
    syntax: SpanSyntax
    match: re.Match[str]
    start: int
    body: int
    line: int
    next_line: int
    end: EndFinder


@dataclass(slots=True)
class OpenThinking:
    close: str
    start: int
    line: int


@dataclass(frozen=True, slots=True)
class SyntaxTables:
    """What a scanner derives from its syntaxes, made once per set of syntaxes: a scanner is
    made per reply, and a short reply would spend as long making these as reading."""

    tags: dict[str, TagSyntax]
    spans: dict[str, list[SpanSyntax]]
    needle_groups: NeedleGroups
    other_needles: tuple[str, ...]
    """The needles but for backtick fences (a tilde fence takes the general rules)."""
    outside_quiet: tuple[str, ...]
    """Outside blocks, what can complete something on the line that holds it (thinking
    completes nothing: lines that open it may wait)."""
    line_start_needles: frozenset[str]


@functools.lru_cache(maxsize=64)
def syntax_tables(tags: tuple[TagSyntax, ...], spans: tuple[SpanSyntax, ...]) -> SyntaxTables:
    by_opener = {syntax.opener: syntax for syntax in tags}
    by_needle: dict[str, list[SpanSyntax]] = {}
    for span in spans:
        by_needle.setdefault(span.needle, []).append(span)
    needles = ("```", "~~~", "<think", *by_opener, *by_needle)
    return SyntaxTables(by_opener, by_needle, needle_groups(needles), needles[1:],
                        tuple(needle for needle in needles if needle != "<think"),
                        frozenset(("```", "~~~", *by_needle)))


class ScanState(KeptText):
    """The open items of a scan and the diagnostics about them."""

    def __init__(self, blocks: Blocks, tags: Sequence[TagSyntax],
                 spans: Sequence[SpanSyntax], fast_paths: bool) -> None:
        super().__init__()
        self._fast_paths = fast_paths
        """Whether fence lines are read by the fast loop and common calls by the syntaxes'
        ``quick`` readers (else every step takes the general rules: the tests turn them off,
        to check the fast paths against them)."""
        self._tables = tables = syntax_tables(tuple(tags), tuple(spans))
        self._tags = tables.tags
        self._spans = tables.spans
        self._blocks: Blocks = blocks
        self._mode = OUTSIDE
        self._fence: Fence | None = None
        self._think: OpenThinking | None = None
        self._tag: OpenTag | None = None
        self._span: OpenSpan | None = None
        self._viewer = False
        """Every bare fence closes its block, as a markdown viewer reads it: set once a reply
        held more than :data:`MAX_REREADS` file blocks that closed at an ambiguous fence."""
        self.diagnostics: list[Diagnostic] = []
        """Calls that were meant but will not run, in the order they were found."""

    def _new_fence(self, ticks: int, lang: str, start: int, body: int, line: int = 0,
                   marker: str = "```") -> Fence:
        return Fence(ticks, lang, start, body, opens_container(ticks, lang) and not self._viewer,
                     line, [], marker=marker, viewer=self._viewer)

    def _open_fence(self, ticks: int, lang: str, start: int, body: int,
                    marker: str = "```") -> None:
        self._fence = self._new_fence(ticks, lang, start, body, marker=marker)
        self._mode = FENCE

    def _open_glued_thinking(self, region: str, at: int, info: str, start: int) -> int:
        """Open the thinking whose tag ``info`` (at ``at``) starts with; where reading goes on."""
        glued = glued_thinking(info)
        assert glued is not None
        tag, close = glued
        self._think = OpenThinking(close, start, 0)
        self._mode = THINK
        return at + len(info) - len(info.lstrip(" \t")) + len(tag)

    def _closed(self, held: Fence | None, lang: str, start: int, content: str, end: int,
                out: list[Found]) -> None:
        """The one step from a closed block to what it is reported as (``held``: the open
        block, when there is one; a block the fast loop opened and closed has none)."""
        if held is not None and self._blocks == "call" and held.held_examples:
            self._report_swallowed(held, held.marker[0] * held.ticks, content)
        found = closed_block(self._blocks, lang, content, start, end)
        if found is not None:
            out.append(found)

    def _keep_from(self) -> int | None:
        if self._fence is not None:
            return self._fence.body
        if self._tag is not None:
            return self._tag.start
        if self._span is not None:
            return self._span.start
        if self._think is not None:
            return self._think.start
        return None

    def _take(self, item: ToolCall | Problem, line: int, out: list[Found], end: int,
              opened: int) -> None:
        """A call goes out (ending at ``end``); a problem becomes a diagnostic on its own line
        (``line`` is that of the offset ``opened``, where the call's opener stands)."""
        if isinstance(item, ToolCall):
            out.append(with_end(item, end))
            return
        if item.start >= self._region_base:
            line = self._line_of(item.start)
        elif item.start > opened:  # after the opener, in an earlier chunk
            line += self._slice(opened, item.start).count("\n")
        self.diagnostics.append(Diagnostic(
            "malformed", f"The {item.label} call on line {line} {item.what}; it did not run.",
            item.start, line, item.name))

    # -- the end of the text -------------------------------------------------------------

    def _fall_back(self, out: list[Found]) -> tuple[int, int] | None:
        """Close a block that never closed because a bare fence in it was read as opening an
        example at that fence instead (the reading that closes every fence); where to read
        again, and the lines before it."""
        fence = self._fence
        if fence is None or fence.fallback is None:
            return None
        close = fence.fallback
        # the body's first line is the one after the opener's
        line = fence.line + 1 + self._slice(fence.body, close).count("\n")
        self._close_fence(fence, close, out)
        if self._blocks == "call" and fence.lang:
            ticks = fence.marker[0] * fence.ticks
            self.diagnostics.append(Diagnostic(
                "ambiguous", f"The {ticks}{fence.lang} block opened on line {fence.line} was "
                f"never closed after its bare {ticks} on line {line}, so it was read as closing "
                f"there, as a markdown viewer shows it: it holds lines {fence.line + 1} to "
                f"{line - 1} only, and the text after line {line} is not part of it. If it "
                f"was meant to hold fenced blocks, open it with more backticks than any "
                f"fence inside ({ticks}`{fence.lang}) and close it with as many.",
                fence.start, fence.line, fence.lang.split()[0], codeblock=True))
        return self._next_line(close), line

    def _close_fence(self, fence: Fence, line_start: int, out: list[Found],
                     line_end: int | None = None) -> None:
        """Close ``fence`` at the fence line starting at ``line_start`` (ending at
        ``line_end``, when the caller knows)."""
        content = self._slice(fence.body, line_start - 1) if line_start - 1 > fence.body else ""
        self._fence = None
        self._mode = OUTSIDE
        self._closed(fence, fence.lang, fence.start, content,
                     self._line_end(line_start) if line_end is None else line_end, out)

    def _report_unfinished(self) -> tuple[int, int] | None:
        """A diagnostic for what is still open at the end; where to read again, if anywhere
        (an offset, and the number of lines before it)."""
        if self._fence is not None:
            self._report_unclosed_block(self._fence)
            return None
        if self._think is not None:
            think = self._think
            if self._looks_like_a_call(self._slice(think.start, self._offset)):
                self.diagnostics.append(Diagnostic(
                    "hidden", f"The {THINK_TAGS[0 if think.close == '</think>' else 1]} "
                    f"section opened on line {think.line} was never closed, so everything after "
                    f"it, including what looks like a tool call, was taken as thinking and "
                    f"nothing in it ran.", think.start, think.line))
            return None
        if self._tag is not None:
            tag = self._tag
            self.diagnostics.append(Diagnostic(
                "unclosed", f"The {tag.syntax.opener} call opened on line {tag.line} was never "
                f"closed with {tag.syntax.closing}, so it did not run.", tag.start, tag.line))
            return self._next_line(tag.start), tag.line
        if self._span is not None:
            span = self._span
            label = span.syntax.label(span.match)
            self.diagnostics.append(Diagnostic(
                "unclosed", f"The {label} call on line {span.line} never ends (its brackets "
                f"do not balance), so it did not run.", span.start, span.line,
                span.match.groupdict().get("name")))
            return span.next_line, span.line
        return None

    def _report_unclosed_block(self, fence: Fence) -> None:
        if self._blocks != "call":
            return
        ticks = fence.marker[0] * fence.ticks
        if fence.lang:
            self.diagnostics.append(Diagnostic(
                "unclosed", f"The {ticks}{fence.lang} block opened on line {fence.line} was "
                f"never closed, so it did not run; end it with a line of {ticks}.",
                fence.start, fence.line, fence.lang.split()[0], codeblock=True))
        self._report_swallowed(fence, ticks)

    def _report_swallowed(self, fence: Fence, ticks: str, content: str | None = None) -> None:
        """A diagnostic for each block opened inside ``fence``, which never closed (or, given
        its ``content``, which closed and holds no documents): each call written there was
        taken as the block's content and did not run."""
        closed = content is not None
        body = self._slice(fence.body, self._offset) if content is None else content
        line = fence.line or self._line_of(fence.start)
        opened = f"the {ticks}{fence.lang} block" if fence.lang else f"a bare {ticks} block"
        why, fix = ("", "write it outside the other block to run it") if closed else \
            (" that was never closed", "close the outer block first")
        for number, text in enumerate(body.split("\n"), line + 1):
            stripped = text.lstrip(" \t")
            if not stripped.startswith(MARKERS):
                continue
            info = stripped.lstrip(stripped[0])
            if len(stripped) - len(info) < 3 or not is_langtag(info):
                continue
            self.diagnostics.append(Diagnostic(
                "swallowed", f"The {stripped.rstrip()} block on line {number} is inside "
                f"{opened} opened on line {line}{why}, so it was taken as that block's text "
                f"and did not run; {fix}.", fence.start, number, info.strip().split()[0],
                codeblock=True))

    def _looks_like_a_call(self, text: str) -> bool:
        if "```" in text or "~~~" in text or any(opener in text for opener in self._tags):
            return True
        return any(span.opener.search(text) for spans in self._spans.values() for span in spans)
