"""The one scanning engine behind every parser entry point.

Text arrives in chunks. Only complete lines are scanned, and each exactly once: a region of
new complete lines is searched with a regular expression that jumps straight to the lines that
matter (fences, thinking tags, call openers), so prose costs little and feeding a reply chunk
by chunk costs O(total length). Parsing a whole text is the same machine fed once, which is
why whole-text and streaming results are equal by construction.

Fence rules (see ``docs`` in the README for examples):

* A line whose first non-blank characters are 3+ backticks or 3+ tildes is a fence
  (CommonMark's two kinds); a backtick fence's info string (the langtag) may not contain a
  backtick, so ```` ```x``` ```` inline is prose.
* Inside a block, fences of the other kind are content: a tilde block closes only at a tilde
  fence, a backtick block only at a backtick fence. Inside a block opened with L of them,
  fences shorter than L are content. A fence with a langtag and at least L opens a nested
  block; a bare fence closes the innermost nested block, and a bare fence of exactly L with
  nothing nested closes the block itself. A fence followed by anything else (three quotes, say)
  is content, as a markdown viewer shows it.
* Thinking glued to a fence (```` ```<think> ````, Gemini's ```` ```thinking> ````) is thinking:
  outside blocks it opens a thinking section, and at the length that closes the block it
  closes the block and the thinking is read after it.
* A block nested in another is that block's text: it does not run. Where the outer block is
  no document (where examples are expected), a markdown viewer would have ended it at the
  nested block's closing fence, so each langtag block in it is named by a diagnostic (its
  start: the outer block's); the agent drops it when the outer block itself ran.
* Whether such a bare fence opens or closes is decided by the following line, but only for
  blocks that hold documents (a ``markdown``/``md`` langtag or a ``.md`` path, or a block that
  already held a nested one): there a bare fence followed by a line of text opens a nested
  block. Everywhere else, a bare fence of the right length closes.
* ````````shell`` (a closing fence glued to an opening one) is split into the two.
* These decisions are made in one place, :func:`_outside_action` and :func:`_fence_action`;
  every path of the scanner (a line at a time, the fast loop over fence lines, the general
  step) asks them.
* ``<thinking>…</thinking>`` and ``<think>…</think>`` are skipped; an unclosed one hides the
  rest of the text; a closing tag without an opening one is dropped.
* A block is final only once the line after its closing fence has begun, so a streaming
  consumer never sees a half-written block.
* ``\r\n`` and lone ``\r`` line ends are read as ``\n`` (offsets are those of the normalised
  text), so no carriage return reaches a command.
* Tag and span syntaxes (:mod:`.syntax`) are found outside blocks and thinking. One that never
  ends, or cannot be read, becomes a :class:`Diagnostic`, and the text after its opener is
  read again, so a broken call never hides the calls after it.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass
from enum import Enum, auto
from typing import Final, Literal

from .model import FENCED, Codeblock, Diagnostic, ToolCall, with_end
from .strings import TOO_DENSE, find_first_of, find_literal, starts_at
from .syntax import EndFinder, Problem, SpanSyntax, TagSyntax
from .xmlcalls import CDATA_CLOSE, CDATA_OPEN, find_outside_cdata

_THINK_TAGS = ("<think>", "<thinking>")
_GLUED_THINKING = (("<thinking>", "</thinking>"), ("<think>", "</think>"),
                   ("thinking>", "</thinking>"), ("think>", "</think>"))
"""Thinking tags a model glues to a fence, with a ``<`` or without, and how each closes."""
_MARKERS = ("```", "~~~")
_BACKTICKS = ("```",)
"""What can complete something inside a backtick block (its quiet strings)."""
_TILDES = ("~~~",)
_NOTHING: list[Found] = []
"""What :meth:`Scanner._step_line` returns when a line completes nothing; never added to."""
_STEP_LIMIT = 1024
"""New lines up to this length are taken a line at a time where they can be (see
:meth:`Scanner._take_lines`); longer ones, such as a whole text, are scanned as one region."""
MAX_REREADS = 8
"""How often the end of a reply is read again after a broken call: each is a pass over the
rest, so a reply of many broken calls costs a bounded number of passes, not one each."""
# A langtag whose first word is a document language, or whose last word is a document path.
_DOCUMENT_LANGTAG = re.compile(r"(?i)^(?:markdown|md|mdx|rst)(?:\s|$)|\.(?:md|markdown|mdx|rst)$")
# A path argument: has a folder, or a file extension.
_FILE_ARGUMENT = re.compile(r"/|\.\w+$")
# The first word of a language tag or tool name: word characters and . + # / ~ : - only.
_LANGTAG_WORD = re.compile(r"[\w.+#/~:\-]+(?:\s|$)")

Found = Codeblock | ToolCall


_FenceLine = tuple[int, int, str, int]
"""A fence line: where the line starts, how many backticks (or tildes), the info string
after them, and where the line ends (its newline, or the end of the region). A plain tuple:
a reply of many small blocks makes two per block."""


def _line_start_before(region: str, i: int) -> int | None:
    """Start of the line holding ``i`` if only blanks precede ``i`` on it, else None."""
    if i == 0 or region[i - 1] == "\n":
        return i
    start = region.rfind("\n", 0, i) + 1
    return start if not region[start:i].strip(" \t") else None


def _line_end(region: str, i: int) -> int:
    end = region.find("\n", i)
    return len(region) if end == -1 else end


def _fence_line(region: str, line_start: int, at: int, char: str = "`") -> _FenceLine:
    line_end = region.find("\n", at)
    if line_end == -1:
        line_end = len(region)
    info = region[at:line_end].lstrip(char)
    return line_start, line_end - at - len(info), info, line_end


def _next_run(region: str, start: int) -> int:
    """Where the next run of 3+ backticks at or after ``start`` begins; the region's length
    if none does."""
    at = find_literal(region, "```", start)
    return len(region) if at == -1 else at


def _find_fence(region: str, pos: int, marker: str) -> tuple[int, _FenceLine] | None:
    """The next line at or after ``pos`` that starts with ``marker`` (3 backticks or
    tildes): where its backticks start, and the line."""
    while (i := find_literal(region, marker, pos)) != -1:
        line_start = _line_start_before(region, i)
        if line_start is not None:
            return i, _fence_line(region, line_start, i, marker[0])
        pos = _line_end(region, i) + 1
    return None


_NeedleGroups = tuple[tuple[str, ...], ...]
"""Needles grouped by their first character, each group in the order given."""


def _needle_groups(needles: tuple[str, ...]) -> _NeedleGroups:
    groups: dict[str, list[str]] = {}
    for needle in needles:
        groups.setdefault(needle[0], []).append(needle)
    return tuple(tuple(group) for group in groups.values())


class _NeedleFinder:
    """The next occurrence of any of several literals.

    The needles that start with the same character are searched together
    (:func:`~.strings.find_first_of`), and where each group occurs next is cached, so a
    region is searched once per group however many tokens it holds (far faster than a regex
    alternation over prose). A group too dense in its first character for that is searched
    per needle with ``str.find`` from then on, each needle's next place cached (a needle
    that is not there is looked for once).
    """

    __slots__ = ("_at", "_found", "_groups", "_next", "_region", "mid_line_until")

    def __init__(self, region: str, groups: _NeedleGroups):
        self._region = region
        self._groups = groups
        self._at = [-2] * len(groups)
        """Where each group occurs next (-1: nowhere; -2: not searched yet)."""
        self._found = [""] * len(groups)
        """Which needle of each group occurs there."""
        self._next: dict[str, int] = {}
        """Where each needle of a group searched per needle occurs next (-1: nowhere; -2: not
        searched yet)."""
        self.mid_line_until = -1
        """Offsets below this are known not to start a line (saves rescanning long lines)."""

    def line_start_before(self, at: int) -> int | None:
        if at < self.mid_line_until:
            return None
        start = _line_start_before(self._region, at)
        if start is None:
            self.mid_line_until = _line_end(self._region, at)
        return start

    def find(self, pos: int, past_fences: bool = False) -> tuple[str, int] | None:
        """The first needle at or after ``pos`` (one other than ``````` with
        ``past_fences``), and where it is."""
        best_needle = ""
        best = -1
        for group in range(len(self._groups)):
            needles = self._groups[group]
            if past_fences and needles[0] == "```":
                continue
            at = self._at[group]
            if at != -1 and at < pos:
                if needles[0] in self._next:
                    at, needle = self._find_each(needles, pos)
                else:
                    at, needle = find_first_of(self._region, needles, pos)
                    if at == TOO_DENSE:
                        for each in needles:
                            self._next[each] = -2
                        at, needle = self._find_each(needles, pos)
                self._at[group], self._found[group] = at, needle
            if at != -1 and (best == -1 or at < best):
                best_needle, best = self._found[group], at
        return None if best == -1 else (best_needle, best)

    def _find_each(self, needles: tuple[str, ...], pos: int) -> tuple[int, str]:
        best, best_needle = -1, ""
        for needle in needles:
            at = self._next[needle]
            if at != -1 and at < pos:
                at = self._next[needle] = self._region.find(needle, pos)
            if at != -1 and (best == -1 or at < best):
                best, best_needle = at, needle
        return best, best_needle


class _Mode(Enum):
    OUTSIDE = auto()
    FENCE = auto()
    THINK = auto()
    TAG = auto()
    SPAN = auto()


# The modes as plain module globals: looking a member up on an Enum class goes through its
# metaclass (about ten times the cost of a global), and the scanner asks for one per line.
_OUTSIDE: Final = _Mode.OUTSIDE
_FENCE: Final = _Mode.FENCE
_THINK: Final = _Mode.THINK
_TAG: Final = _Mode.TAG
_SPAN: Final = _Mode.SPAN


@functools.lru_cache(maxsize=256)
def _holds_files(lang: str) -> bool:
    """Blocks that hold whole documents or files (``markdown``, ``save notes.txt``), whose
    content may itself hold fenced examples."""
    words = lang.split()
    if len(words) >= 2 and ("/" in words[-1] or _FILE_ARGUMENT.search(words[-1]) is not None):
        return True  # the common case first: a path (``save src/app.py``)
    return _DOCUMENT_LANGTAG.search(lang) is not None


@functools.lru_cache(maxsize=256)
def _is_langtag(info: str) -> bool:
    """Whether a fence's info string starts like a language or tool name (three quotes,
    ``<think>`` and ``thinking>`` do not)."""
    return _LANGTAG_WORD.match(info.strip()) is not None


def _held_examples(fence: _Fence) -> bool:
    """Whether a block that is no document held nested blocks: a markdown viewer ends it
    at the first bare fence, so the blocks after that are its text only in our reading, and
    each is reported (a document's examples are its text)."""
    return fence.container and not (fence.lang and _holds_files(fence.lang))


def _name_and_argline(lang: str) -> tuple[str, str]:
    """A call's name (the langtag's first word) and argument line (the rest)."""
    words = lang.split(None, 1)
    return words[0], words[1] if len(words) == 2 else ""


def _is_glued(ticks: int, info: str) -> bool:
    return ticks >= 6 and ticks % 2 == 0 and info[:1] not in ("", " ", "\t", "`")


def _glued_thinking(info: str) -> tuple[str, str] | None:
    """The thinking tag a fence's info string starts with, and its closing tag."""
    start = info.lstrip(" \t")
    for tag, close in _GLUED_THINKING:
        if start.startswith(tag):
            return tag, close
    return None


# What a fence line does (the fence rules of the module, decided in one place).
_CONTENT: Final = 0
"""It is text: prose outside blocks, content inside one."""
_OPENS: Final = 1
"""Outside: it opens a block. Inside: it opens a nested block (an example)."""
_CLOSES: Final = 2
_CLOSES_NESTED: Final = 3
_NEXT_LINE_DECIDES: Final = 4
"""A bare fence in a block that holds documents: it closes unless a line of text follows."""
_SPLITS: Final = 5
"""A closing fence glued to an opening one (````````shell``): read as the two."""
_THINKS: Final = 6
"""Outside: thinking glued to a fence opens thinking. Inside: it closes the block, and the
thinking after the fence is read after the block."""


def _outside_action(char: str, count: int, info: str) -> int:
    """What a fence line of ``count`` ``char`` and ``info`` does outside blocks."""
    if char == "`":
        if count >= 6 and _is_glued(count, info):
            return _SPLITS
        if "`" in info:
            return _CONTENT  # ```x``` inline
    if _glued_thinking(info) is not None:
        return _THINKS
    return _OPENS


def _fence_action(char: str, count: int, info: str, open_char: str, open_count: int,
                  nested: int, container: bool) -> int:
    """What a fence line of ``count`` ``char`` and ``info`` does inside a block opened with
    ``open_count`` ``open_char`` (``nested``: the length of the innermost example open in it,
    0 if none; ``container``: the block holds documents)."""
    if char != open_char:
        return _CONTENT
    if char == "`":
        if count >= 6 and _is_glued(count, info):
            return _SPLITS
        if "`" in info:
            return _CONTENT
    if not info.strip():
        if count < open_count:
            return _CONTENT
        if nested:
            return _CLOSES_NESTED if count >= nested else _CONTENT
        if count > open_count:
            return _CONTENT  # a bare fence longer than the opener
        return _NEXT_LINE_DECIDES if container else _CLOSES
    if _is_langtag(info):
        return _OPENS if count >= open_count else _CONTENT
    if count == open_count and not nested and _glued_thinking(info) is not None:
        return _THINKS
    return _CONTENT


@dataclass(slots=True)
class _Fence:
    ticks: int
    """How many backticks (or tildes) opened it."""
    lang: str
    start: int
    body: int
    container: bool
    line: int
    """1-based line of ``start``; 0 until counted (only a block that outlives its region, or
    is reported, needs one). The same holds for the other open items below."""
    nested: list[int]
    pending_close: int | None = None
    fallback: int | None = None
    """The first bare fence that was read as opening a nested block although it could have
    closed this one (its offset): if the block never closes, it closes there. Its line is
    counted only then."""
    marker: str = "```"
    """``````` or ``~~~``: what its fences are made of (the other kind is content)."""

    def action(self, count: int, info: str, char: str = "`") -> int:
        """What a fence line of ``count`` ``char`` and ``info`` does inside this block."""
        return _fence_action(char, count, info, self.marker[0], self.ticks,
                             self.nested[-1] if self.nested else 0, self.container)

    def nests(self, action: int, ticks: int) -> bool:
        """Take a nested block's opening or closing; whether ``action`` was one."""
        if action == _CLOSES_NESTED:
            self.nested.pop()
        elif action == _OPENS:
            self.nested.append(ticks)
            self.container = True
        else:
            return False
        return True


@dataclass(slots=True)
class _Tag:
    syntax: TagSyntax
    start: int
    body: int
    line: int
    in_cdata: bool = False


@dataclass(slots=True)
class _Span:
    syntax: SpanSyntax
    match: re.Match[str]
    start: int
    body: int
    line: int
    next_line: int
    end: EndFinder


@dataclass(slots=True)
class _Think:
    close: str
    start: int
    line: int


@dataclass(frozen=True, slots=True)
class _SyntaxTables:
    """What a scanner derives from its syntaxes, made once per set of syntaxes: a scanner is
    made per reply, and a short reply would spend as long making these as reading."""

    tags: dict[str, TagSyntax]
    spans: dict[str, list[SpanSyntax]]
    needle_groups: _NeedleGroups
    other_needles: tuple[str, ...]
    """The needles but for backtick fences (a tilde fence takes the general rules)."""
    outside_quiet: tuple[str, ...]
    """Outside blocks, what can complete something on the line that holds it (thinking
    completes nothing: lines that open it may wait, see :meth:`Scanner._pass_clean`)."""
    line_start_needles: frozenset[str]


@functools.lru_cache(maxsize=64)
def _syntax_tables(tags: tuple[TagSyntax, ...], spans: tuple[SpanSyntax, ...]) -> _SyntaxTables:
    by_opener = {syntax.opener: syntax for syntax in tags}
    by_needle: dict[str, list[SpanSyntax]] = {}
    for span in spans:
        by_needle.setdefault(span.needle, []).append(span)
    needles = ("```", "~~~", "<think", *by_opener, *by_needle)
    return _SyntaxTables(by_opener, by_needle, _needle_groups(needles), needles[1:],
                         tuple(needle for needle in needles if needle != "<think"),
                         frozenset(("```", "~~~", *by_needle)))


class Scanner:
    """Finds code blocks and tool calls in text fed chunk by chunk.

    ``feed`` returns what became certain with that chunk; ``finish`` returns the rest once the
    text is complete. ``blocks`` says how code blocks are reported: as :class:`Codeblock`,
    as :class:`ToolCall` (blocks with a langtag, named by its first word), or not at all (the
    ``xml`` format tracks them only to ignore calls written inside them). ``tags`` and
    ``spans`` are the format's other call syntaxes. :attr:`diagnostics` collects the calls
    that were meant but will not run.
    """

    def __init__(self, *, blocks: Literal["codeblock", "call", "none"] = "codeblock",
                 tags: Sequence[TagSyntax] = (), spans: Sequence[SpanSyntax] = (),
                 fast_paths: bool = True):
        self._fast_paths = fast_paths
        """Whether :meth:`_scan_fences` reads fence lines and the tag and span syntaxes'
        ``quick`` readers read common calls (else every step takes the general rules: the
        tests turn them off, to check the fast paths against them)."""
        tables = _syntax_tables(tuple(tags), tuple(spans))
        self._tags = tables.tags
        self._spans = tables.spans
        self._needle_groups = tables.needle_groups
        self._other_needles = tables.other_needles
        self._outside_quiet = tables.outside_quiet
        self._line_start_needles = tables.line_start_needles
        self._blocks = blocks
        self._mode = _OUTSIDE
        self._fence: _Fence | None = None
        self._think: _Think | None = None
        self._tag: _Tag | None = None
        self._span: _Span | None = None
        self._offset = 0
        self._lines = 0
        """Newlines before the region being scanned (for diagnostics' line numbers), but for
        those in :attr:`_uncounted`."""
        self._uncounted: list[tuple[str, int]] = []
        """The last regions scanned, and from where their newlines are not counted yet."""
        self._region_base = 0
        self._region = ""
        self._counted_to = 0
        self._counted_lines = 0
        self._partial: list[str] = []
        self._carriage_return = False
        self._plain = True
        """No carriage return is held back and the text is not finished: a chunk without a line
        end only needs to be kept (the fast path of :meth:`feed`)."""
        self._clean: list[str] = []
        """Complete lines not taken yet, each without its last newline: they hold none of the
        strings in :attr:`_quiet`, so they complete nothing (see :meth:`feed`)."""
        self._quiet: tuple[str, ...] | None = self._outside_quiet
        """The strings that can complete something, or change what can, in the current mode
        (outside blocks, ``<think`` waits: see :meth:`_pass_clean`); new lines without any of
        them wait in :attr:`_clean`. None: every line is taken at once (a span, or a bare
        fence whose next line decides)."""
        self._kept: list[str] = []
        self._kept_base = 0
        self._run_at = -1
        """Where :meth:`_scan_fences` found the next run of backticks in the region being
        scanned (its length: none is left), so each run is found once; -1: not searched."""
        self._finished = False
        self.diagnostics: list[Diagnostic] = []
        """Calls that were meant but will not run, in the order they were found."""

    @property
    def reports_codeblocks(self) -> bool:
        """Whether :meth:`feed` and :meth:`finish` report code blocks (else tool calls only)."""
        return self._blocks == "codeblock"

    @property
    def settled(self) -> int:
        """Every call and diagnostic that starts before this offset has been reported: the
        start of what is still open, or the end of the complete lines scanned."""
        if self._clean:
            self._pass_clean()
        held = (self._fence, self._think, self._tag, self._span)
        return min((item.start for item in held if item is not None), default=self._offset)

    # -- feeding -------------------------------------------------------------------------
    #
    # A model streams many small chunks; most hold no line end, and most lines hold nothing
    # that matters in the current mode. So ``feed`` costs about what the minimal consumer of
    # the benchmarks costs: a chunk without a line end is appended to :attr:`_partial`; at a
    # line end the new lines are joined, and when they hold none of the strings that can
    # complete something in the current mode (:attr:`_quiet`) they wait in :attr:`_clean`,
    # untouched, until a line that can comes (or :attr:`settled` or ``finish`` asks). A line
    # that can, if it is a fence line or prose, takes :meth:`_step_line`, which does for that
    # one line what a scan does; anything else is scanned as a region. Lines that wait
    # complete nothing, so every call is still reported with the chunk that completes it.

    def feed(self, chunk: str) -> list[Found]:
        """Add text; return the blocks and calls that are now complete."""
        if "\n" not in chunk:
            if "\r" not in chunk and self._plain:
                self._partial.append(chunk)  # no line is complete yet
                return []
            return self._feed_other(chunk)
        if "\r" in chunk or not self._plain:
            return self._feed_other(chunk)
        before, _, after = chunk.rpartition("\n")
        partial = self._partial
        partial.append(before)
        lines = "".join(partial)  # the new complete lines, without their last newline
        self._partial = [after]
        quiet = self._quiet
        if quiet is not None:
            for needle in quiet:
                if needle in lines:
                    break
            else:
                self._clean.append(lines)  # they can complete nothing
                return []
        return self._take_lines(lines)

    def _feed_other(self, chunk: str) -> list[Found]:
        """:meth:`feed` for a chunk with a carriage return, one after a carriage return that
        ended a chunk, and one after :meth:`finish`."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        chunk = self._normalise(chunk)
        before, newline, after = chunk.rpartition("\n")
        if not newline:
            if chunk:
                self._partial.append(chunk)
            return []
        self._partial.append(before)
        lines = "".join(self._partial)
        self._partial = [after] if after else []
        quiet = self._quiet
        if quiet is not None and not any(needle in lines for needle in quiet):
            self._clean.append(lines)
            return []
        return self._take_lines(lines)

    def _take_lines(self, lines: str) -> list[Found]:
        """New complete lines (without the last newline), one of which can complete
        something. Short ones go a line at a time while :meth:`_step_line` can take them,
        and the lines after one that can wait in :attr:`_clean` when they can; what is left
        is scanned as a region."""
        out: list[Found] = []
        if not self._fast_paths:
            pass
        elif "\n" not in lines:  # the common case: one line
            found = self._step_line(lines, None)
            if found is not None:
                return found if found else out
        elif len(lines) <= _STEP_LIMIT:
            while True:
                line, newline, rest = lines.partition("\n")
                found = self._step_line(line, rest if newline else None)
                if found is None:
                    break  # the general rules take it from this line
                if found:
                    out += found
                if not newline:
                    return out
                lines = rest
                quiet = self._quiet
                if quiet is None:
                    break
                for needle in quiet:
                    if needle in rest:
                        break
                else:
                    self._clean.append(rest)
                    return out
        if self._clean:
            self._pass_clean()
        out += self._scan(lines + "\n", final=False)
        self._set_quiet()
        return out

    def _pass_clean(self) -> None:
        """Take the lines waiting in :attr:`_clean`. What is open keeps them; outside
        blocks they only move the offset on, unless they open thinking (which completes
        nothing, so it may wait, but changes what the next lines are)."""
        clean = self._clean
        clean.append("")
        lines = "\n".join(clean)
        self._clean = []
        mode = self._mode
        if mode is _OUTSIDE:
            if "<think" in lines:
                found = self._scan(lines, final=False)
                assert not found, "a line without a fence, tag or span completes nothing"
                self._set_quiet()
                return
        else:  # what is open keeps its text
            if not self._kept:
                self._kept_base = self._offset
            self._kept.append(lines)
        self._offset += len(lines)
        self._lines += lines.count("\n")

    def _set_quiet(self) -> None:
        """Set :attr:`_quiet` for the mode the scanner is in now."""
        mode = self._mode
        quiet: tuple[str, ...] | None
        if mode is _OUTSIDE:
            quiet = self._outside_quiet
        elif mode is _FENCE:
            fence = self._fence
            assert fence is not None
            quiet = None if fence.pending_close is not None else (
                _BACKTICKS if fence.marker == "```" else _TILDES)
        elif mode is _THINK:
            assert self._think is not None
            quiet = (self._think.close,)
        elif mode is _TAG:
            tag = self._tag
            assert tag is not None
            quiet = (CDATA_CLOSE,) if tag.in_cdata else (tag.syntax.closing, CDATA_OPEN)
        else:
            quiet = None  # a span's end is found by looking at every character
        self._quiet = quiet

    def _step_line(self, line: str, rest: str | None) -> list[Found] | None:
        """Take the next complete ``line`` (without its newline; ``rest``: the complete lines
        after it, if any) outside blocks or in one, exactly as a scan would, without setting
        up a region. None when the general rules must take it: another needle on the line,
        a glued fence, a fence that closes mid-line, a bare fence in a document block whose
        next line is not here yet, another mode."""
        if self._mode is _OUTSIDE:
            for needle in self._other_needles:
                if needle in line:
                    return None
            if self._clean:
                self._pass_clean()
                if self._mode is not _OUTSIDE:
                    return None
            stripped = line.lstrip(" \t")
            if stripped.startswith("```"):
                info = stripped.lstrip("`")
                ticks = len(stripped) - len(info)
                action = _outside_action("`", ticks, info)
                if action in (_SPLITS, _THINKS):
                    return None
                if action == _OPENS:  # else ```x``` inline: prose
                    base = self._offset
                    lang = info.strip()
                    self._fence = _Fence(ticks, lang, base + len(line) - len(stripped),
                                         base + len(line) + 1, ticks == 3 and _holds_files(lang),
                                         self._lines_before() + 1, [])
                    self._mode = _FENCE
                    self._quiet = _BACKTICKS
            self._offset += len(line) + 1
            self._lines += 1
            return _NOTHING
        fence = self._fence
        if self._mode is not _FENCE or fence is None or fence.pending_close is not None \
                or fence.marker != "```":
            return None
        stripped = line.lstrip(" \t")
        if stripped.startswith("```"):
            info = stripped.lstrip("`")
            ticks = len(stripped) - len(info)
            action = fence.action(ticks, info)
            if action == _CLOSES:
                return self._step_close(fence, line)
            if fence.nests(action, ticks):
                pass
            elif action == _NEXT_LINE_DECIDES:
                if rest is None:
                    return None
                following = rest.partition("\n")[0].strip()
                if not following or following.startswith(("```", "~~~")):
                    return self._step_close(fence, line)
                if self._clean:
                    self._pass_clean()
                if fence.fallback is None:
                    fence.fallback = self._offset
                fence.nested.append(fence.ticks)
            elif action != _CONTENT:
                return None  # split, or closed with thinking after it: the general rules
        if self._clean:
            self._pass_clean()
        if not self._kept:
            self._kept_base = self._offset
        self._kept.append(line + "\n")
        self._offset += len(line) + 1
        self._lines += 1
        return _NOTHING

    def _step_close(self, fence: _Fence, line: str) -> list[Found]:
        """Close ``fence`` at ``line``, the next complete line (for :meth:`_step_line`)."""
        clean = self._clean
        if self._kept or fence.body != self._offset:
            if clean:
                self._pass_clean()
            close = self._offset
            content = self._slice(fence.body, close - 1) if close - 1 > fence.body else ""
        elif clean:  # the whole body waits there
            content = "\n".join(clean)
            self._clean = []
            close = self._offset + len(content) + 1
            self._lines += content.count("\n") + 1
        else:
            content = ""
            close = self._offset
        if self._blocks == "call" and _held_examples(fence):
            self._report_swallowed(fence, fence.marker[0] * fence.ticks, content)
        self._offset = close + len(line) + 1
        self._lines += 1
        self._fence = None
        self._mode = _OUTSIDE
        self._quiet = self._outside_quiet
        self._kept = []
        blocks = self._blocks
        if blocks == "call":
            if not fence.lang:
                return _NOTHING
            name, argline = _name_and_argline(fence.lang)
            return [ToolCall(name, argline, content, None, None, fence.start, FENCED,
                             close + len(line))]
        if blocks == "codeblock":
            return [Codeblock(fence.lang, content, fence.start)]
        return _NOTHING

    def _lines_before(self) -> int:
        """Newlines before :attr:`_offset` (for a line number, outside a scan)."""
        if self._uncounted:
            self._count_lines()
        return self._lines

    def finish(self) -> list[Found]:
        """Declare the text complete; return what the end of the text completed."""
        if self._finished:
            return []
        if self._clean:
            self._pass_clean()
        if self._carriage_return:
            self._partial.append("\n")
            self._carriage_return = False
        tail = "".join(self._partial)
        self._partial = []
        self._finished = True
        self._plain = False
        out = self._scan(tail, final=True)
        self._end_of_text(out)
        return out

    def parse(self, text: str) -> list[Found]:
        """``feed(text)`` then ``finish()``, for a text known to be whole: it is scanned as
        one final region, so its last line is not held back and nothing is joined or
        copied (on a fresh scanner; otherwise it is exactly those two calls)."""
        if self._offset or self._partial or self._clean or self._carriage_return \
                or self._finished:
            return self.feed(text) + self.finish()
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        self._finished = True
        self._plain = False
        out = self._scan(text, final=True)
        self._end_of_text(out)
        return out

    def _normalise(self, chunk: str) -> str:
        """``\r\n`` and lone ``\r`` as ``\n``; a ``\r`` ending a chunk waits for the next
        one, which may start with the ``\n`` of the same line end."""
        if self._carriage_return:
            chunk = "\r" + chunk
            self._carriage_return = False
        if chunk.endswith("\r"):
            chunk = chunk[:-1]
            self._carriage_return = True
        self._plain = not self._carriage_return
        return chunk.replace("\r\n", "\n").replace("\r", "\n")

    # -- scanning ------------------------------------------------------------------------

    def _scan(self, region: str, final: bool) -> list[Found]:
        base = self._offset
        self._offset += len(region)
        return self._scan_region(region, base, final)

    def _scan_region(self, region: str, base: int, final: bool) -> list[Found]:
        self._region, self._region_base = region, base
        self._counted_to = self._counted_lines = 0
        if not self._kept:
            self._kept_base = base
        self._kept.append(region)
        out: list[Found] = []
        end = len(region)
        pos = 0
        finder = _NeedleFinder(region, self._needle_groups)
        self._run_at = -1
        fence = self._fence
        if fence is not None and fence.pending_close is not None:
            self._decide_pending(fence, region, 0, base, final, out)
        hit: tuple[str, int] | None = None
        while pos < end:
            mode = self._mode
            if mode is _FENCE or (mode is _OUTSIDE and (hit := finder.find(pos))
                                       is not None and hit[0] == "```"):
                pos = self._scan_fences(region, pos, base, out, finder)
                if pos >= end:
                    break
                mode = self._mode  # what the fast loop left to the step below
                if mode is _OUTSIDE:
                    hit = finder.find(pos)
            if mode is _OUTSIDE:
                if hit is None:
                    break
                pos = self._scan_outside(region, hit, base, finder, out)
            elif mode is _FENCE:
                pos = self._scan_fence(region, pos, base, final, out)
            elif mode is _THINK:
                pos = self._scan_think(region, pos)
            elif mode is _TAG:
                pos = self._scan_tag(region, pos, base, out)
            else:
                pos = self._scan_span(region, pos, base, out)
        for held in (self._fence, self._think, self._tag, self._span):
            if held is not None and not held.line:  # it outlives the region that held it
                held.line = self._line_of(held.start)
        self._lines += self._counted_lines
        if self._counted_to < len(region):
            self._uncounted.append((region, self._counted_to))
            if len(self._uncounted) > 2:  # streaming: count as it goes, a region behind
                earlier, counted_to = self._uncounted.pop(0)
                self._lines += earlier.count("\n", counted_to)
        self._trim_kept()
        return out

    def _line_of(self, at: int) -> int:
        """The 1-based line of offset ``at`` in the region being scanned. Lines are counted on
        from the last offset asked about, so a region's line numbers cost one pass."""
        if self._uncounted:
            self._count_lines()
        rel = at - self._region_base
        if rel < self._counted_to:
            self._counted_to = self._counted_lines = 0
        self._counted_lines += self._region.count("\n", self._counted_to, rel)
        self._counted_to = rel
        return self._lines + self._counted_lines + 1

    def _count_lines(self) -> None:
        """Count the newlines of earlier regions that :meth:`_scan_region` left uncounted:
        only a diagnostic needs a line number, so a whole reply is not counted at all
        unless one is made."""
        for region, counted_to in self._uncounted:
            self._lines += region.count("\n", counted_to)
        self._uncounted = []

    def _scan_outside(self, region: str, hit: tuple[str, int], base: int,
                      finder: _NeedleFinder, out: list[Found]) -> int:
        """Take the needle ``hit`` (the first at or after the position reached)."""
        needle, at = hit
        line_start = finder.line_start_before(at) if needle in self._line_start_needles else at
        if line_start is None:
            return at + len(needle)
        if needle == "```" or needle == "~~~":
            char = needle[0]
            _, ticks, info, line_end = _fence_line(region, line_start, at, char)
            start = base + at
            action = _outside_action(char, ticks, info)
            if action == _CONTENT:
                return line_end
            if action == _THINKS:
                return self._open_glued_thinking(region, at + ticks, info, base + at)
            if action == _SPLITS:
                ticks //= 2
                start += ticks
            self._open_fence(ticks, info.strip(), start, base + line_end + 1, needle)
            return line_end
        if needle == "<think":
            for tag in _THINK_TAGS:
                if starts_at(region, tag, at):
                    self._think = _Think("</" + tag[1:], base + at, 0)
                    self._mode = _THINK
                    return at + len(tag)
            return at + 1
        tag_syntax = self._tags.get(needle)
        if tag_syntax is not None:
            if tag_syntax.quick is not None and self._fast_paths:
                read = tag_syntax.quick(region, at, base)
                if read is not None:
                    out.append(read[0])
                    return read[1]
            self._tag = _Tag(tag_syntax, base + at, base + at + len(needle), 0)
            self._mode = _TAG
            return at + len(needle)
        for span in self._spans[needle]:
            m = span.opener.match(region, at)
            if m is not None:
                if span.quick is not None and self._fast_paths:
                    read = span.quick(m, region, base)
                    if read is not None:
                        out.append(read[0])
                        return read[1]
                line_end = region.find("\n", at)
                self._span = _Span(span, m, base + at, base + m.end(), 0,
                                   base + (len(region) if line_end == -1 else line_end + 1),
                                   span.end())
                self._mode = _SPAN
                return m.end()
        return at + len(needle)

    def _scan_think(self, region: str, pos: int) -> int:
        think = self._think
        assert think is not None
        hit = region.find(think.close, pos)
        if hit == -1:
            return len(region)
        self._think = None
        self._mode = _OUTSIDE
        return hit + len(think.close)

    def _open_fence(self, ticks: int, lang: str, start: int, body: int,
                    marker: str = "```") -> None:
        container = ticks == 3 and _holds_files(lang)
        self._fence = _Fence(ticks, lang, start, body, container, 0, [], marker=marker)
        self._mode = _FENCE

    def _open_glued_thinking(self, region: str, at: int, info: str, start: int) -> int:
        """Open the thinking whose tag ``info`` (at ``at``) starts with; where reading goes on."""
        glued = _glued_thinking(info)
        assert glued is not None
        tag, close = glued
        self._think = _Think(close, start, 0)
        self._mode = _THINK
        return at + len(info) - len(info.lstrip(" \t")) + len(tag)

    def _scan_fences(self, region: str, pos: int, base: int, out: list[Found],
                     finder: _NeedleFinder) -> int:
        """Read the fence lines from ``pos`` on, as long as only the common rules apply;
        return where :meth:`_scan_region` must take one step with the general rules (or the
        end of the region).

        Most of a reply is prose and code between fence lines, and most blocks are opened
        and closed by a plain fence each. :func:`~.strings.find_literal` jumps from one run
        of backticks to the next (the lines between them are never looked at one by one), and
        a block opened and closed here lives in local variables only: no object, and no line
        number (counted only if the block outlives the region, for a diagnostic). What the
        common rules do not cover is left to the general step, at the run of backticks: a
        block that holds documents or nested blocks, a glued fence, and, outside blocks, any
        other needle (thinking, a tag, a span) that comes first.

        Where the next run is stays known for the region (:attr:`_run_at`), so each run is
        found once however often the general step takes over: the scan stays linear.
        """
        if not self._fast_paths:
            return pos
        held = self._fence
        if held is not None:
            if held.nested or held.pending_close is not None or held.marker != "```":
                return pos
            ticks, lang, start, body = held.ticks, held.lang, held.start, held.body
            container = held.container
        else:
            ticks, lang, start, body = 0, "", 0, 0  # ticks == 0: no block is open
            container = False
        size = len(region)
        at = self._run_at
        if at < pos:  # not searched yet, or the general step went past it
            at = _next_run(region, pos)
        blocks = self._blocks
        stop = -1  # where the next other needle is, when outside a block (-1: not known)
        line_end = -1  # where the line of the run taken before ends (none yet)
        while True:
            if line_end != -1:  # that run is taken: on to the next
                at = _next_run(region, line_end)
            if at >= size:  # no fence line follows
                if ticks or finder.find(pos, past_fences=True) is None:
                    pos = size
                break
            line_end = region.find("\n", at + 3)
            if line_end == -1:
                line_end = size
            if at and region[at - 1] != "\n":
                line_start = region.rfind("\n", 0, at) + 1
                if region[line_start:at].strip(" \t"):
                    continue  # not at the start of its line: prose or content
            else:
                line_start = at
            info = region[at:line_end].lstrip("`")
            count = line_end - at - len(info)
            if not ticks:  # outside a block
                if stop < pos:
                    hit = finder.find(pos, past_fences=True)
                    stop = len(region) if hit is None else hit[1]
                if at >= stop:
                    break  # the other needle comes first
                action = _outside_action("`", count, info)
                if action != _OPENS and action != _CONTENT:
                    pos = at  # split, or thinking: the general rules
                    break
                pos = line_end
                if action == _CONTENT:
                    continue  # ```x``` inline: prose
                lang = info.strip()
                ticks, start, body = count, base + at, base + pos + 1
                container = count == 3 and _holds_files(lang)
                continue
            action = _fence_action("`", count, info, "`", ticks, 0, container)
            if action == _CONTENT:
                continue
            if action == _NEXT_LINE_DECIDES:  # it closes unless a line of text follows
                after = line_end + 1
                if after >= len(region):
                    pos = at  # the next line is not here yet, or there is none
                    break
                newline = region.find("\n", after)
                following = (region[after:] if newline == -1
                             else region[after:newline]).strip()
                if following and not following.startswith(("```", "~~~")):
                    pos = at
                    break
            elif action != _CLOSES:
                pos = at  # a nested block opens, a split, thinking: the general rules
                break
            pos = line_end  # it closes the block
            if blocks != "none":
                close = base + line_start - 1
                content = (region[body - base : close - base] if body >= base
                           else self._slice(body, close)) if close > body else ""
                if blocks == "codeblock":
                    out.append(Codeblock(lang, content, start))
                else:
                    if container and held is not None and held.start == start \
                            and _held_examples(held):  # a block that held nested ones
                        self._report_swallowed(held, "`" * ticks, content)
                    if lang:
                        name, argline = _name_and_argline(lang)
                        out.append(ToolCall(name, argline, content, None, None, start, FENCED,
                                            base + pos))
            ticks = 0
        self._run_at = at
        if not ticks:
            self._fence = None
            self._mode = _OUTSIDE
        elif held is None or held.start != start:
            self._fence = _Fence(ticks, lang, start, body, container, 0, [])
            self._mode = _FENCE
        return pos

    def _scan_fence(self, region: str, pos: int, base: int, final: bool,
                    out: list[Found]) -> int:
        fence = self._fence
        assert fence is not None
        marker = fence.marker
        found = _find_fence(region, pos, marker)
        if found is None:
            return len(region)
        ticks_at, (line_start, ticks, info, line_end) = found
        line_start += base
        char = marker[0]
        action = fence.action(ticks, info, char)
        if action == _CLOSES:
            self._close_fence(fence, line_start, out, base + line_end)  # the common case
        elif fence.nests(action, ticks):
            pass
        elif action == _NEXT_LINE_DECIDES:
            fence.pending_close = line_start
            self._decide_pending(fence, region, min(line_end + 1, len(region)), base, final,
                                 out)
        elif action == _SPLITS:
            half = ticks // 2
            closing = fence.action(half, "", char)
            if closing in (_CLOSES, _NEXT_LINE_DECIDES):  # glued: it closes
                self._close_fence(fence, line_start, out)
                self._open_fence(half, info.strip(), base + ticks_at + half,
                                 base + line_end + 1)
                return line_end
            if closing == _CLOSES_NESTED:
                fence.nested.pop()
            if half >= fence.ticks:
                fence.nested.append(half)
                fence.container = True
        elif action == _THINKS:  # it closes, and the thinking glued to it is read after
            self._close_fence(fence, line_start, out)
            return self._open_glued_thinking(region, ticks_at + ticks, info, base + ticks_at)
        return line_end

    def _decide_pending(self, fence: _Fence, region: str, next_line: int, base: int,
                        final: bool, out: list[Found]) -> None:
        """Settle a bare fence in a document block by the line that follows it."""
        assert fence.pending_close is not None
        if next_line >= len(region):
            if not final:
                return
            kind = "end"
        else:
            newline = region.find("\n", next_line)
            line = region[next_line:] if newline == -1 else region[next_line:newline]
            stripped = line.strip()
            kind = "close" if not stripped or stripped.startswith(("```", "~~~")) else "open"
        if kind == "open":
            if fence.fallback is None:
                fence.fallback = fence.pending_close
            fence.pending_close = None
            fence.nested.append(fence.ticks)
        else:
            self._close_fence(fence, fence.pending_close, out)

    def _close_fence(self, fence: _Fence, line_start: int, out: list[Found],
                     line_end: int | None = None) -> None:
        """Close ``fence`` at the fence line starting at ``line_start`` (ending at
        ``line_end``, when the caller knows)."""
        content = self._slice(fence.body, line_start - 1) if line_start - 1 > fence.body else ""
        if self._blocks == "call" and _held_examples(fence):
            self._report_swallowed(fence, fence.marker[0] * fence.ticks, content)
        self._fence = None
        self._mode = _OUTSIDE
        if self._blocks == "codeblock":
            out.append(Codeblock(fence.lang, content, fence.start))
        elif self._blocks == "call" and fence.lang:
            name, argline = _name_and_argline(fence.lang)
            out.append(ToolCall(name, argline, content, None, None, fence.start, FENCED,
                                self._line_end(line_start) if line_end is None else line_end))

    def _line_end(self, line_start: int) -> int:
        """Where the line starting at ``line_start`` ends (at its newline)."""
        if line_start >= self._region_base:
            newline = self._region.find("\n", line_start - self._region_base)
            if newline != -1:
                return self._region_base + newline
            return self._region_base + len(self._region)
        return self._next_line(line_start) - 1

    def _scan_tag(self, region: str, pos: int, base: int, out: list[Found]) -> int:
        tag = self._tag
        assert tag is not None
        closing = tag.syntax.closing
        hit = -2  # where the closing tag is; found again only once passed, so linear in CDATA
        while True:
            if tag.in_cdata:
                close = region.find(CDATA_CLOSE, pos)
                if close == -1:
                    return len(region)
                pos = close + len(CDATA_CLOSE)
                tag.in_cdata = False
            if hit != -1 and hit < pos:
                hit = region.find(closing, pos)
            cdata = region.find(CDATA_OPEN, pos, len(region) if hit == -1 else hit)
            if cdata != -1:
                tag.in_cdata = True
                pos = cdata + len(CDATA_OPEN)
                continue
            if hit == -1:
                return len(region)
            body = self._slice(tag.body, base + hit)
            offset = tag.body
            # An opener that was only mentioned ("the `<tool-use>` tag") is superseded by the
            # real one that follows it before the closing tag.
            opener = tag.syntax.opener
            skip = 0
            while (again := find_outside_cdata(body, opener, skip)) != -1:
                skip = again + len(opener)
            if skip:
                body, offset = body[skip:], offset + skip
            for item in tag.syntax.read(body, offset):
                self._take(item, tag.line, out, base + hit + len(closing), tag.start)
            self._tag = None
            self._mode = _OUTSIDE
            return hit + len(closing)

    def _scan_span(self, region: str, pos: int, base: int, out: list[Found]) -> int:
        span = self._span
        assert span is not None
        status, index = span.end.scan(region, pos)
        if status == "more":
            return index
        self._span = None
        self._mode = _OUTSIDE
        text = self._slice(span.body, base + index)
        for item in span.syntax.read(span.match, text, span.start):
            self._take(item, span.line, out, base + index, span.start)
        return index

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

    def _end_of_text(self, out: list[Found]) -> None:
        """Report what the end left open; after a tag or span that never ended, read the text
        after its first line again, so the calls it swallowed are found. A file block that
        never closed because a bare fence inside it was read as opening an example closes at
        that fence instead (the reading that closes every fence), and the rest is read."""
        rereads = 0
        while (restart := self._fall_back(out) or self._report_unfinished()) is not None:
            offset, lines_before = restart
            if rereads == MAX_REREADS:
                self.diagnostics.append(Diagnostic(
                    "unread", f"After line {lines_before} the reply was not read for more "
                    f"calls: it holds more than {MAX_REREADS} broken ones.", offset,
                    lines_before + 1))
                return
            rereads += 1
            text = self._slice(offset, self._offset)
            self._mode = _OUTSIDE
            self._tag = self._span = None
            self._kept = []
            self._lines = lines_before
            self._uncounted = []
            out.extend(self._scan_region(text, offset, final=True))

    def _fall_back(self, out: list[Found]) -> tuple[int, int] | None:
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

    def _report_unfinished(self) -> tuple[int, int] | None:
        """A diagnostic for what is still open at the end; where to read again, if anywhere
        (an offset, and the number of lines before it)."""
        if self._fence is not None:
            fence = self._fence
            if self._blocks == "call":
                ticks = fence.marker[0] * fence.ticks
                if fence.lang:
                    self.diagnostics.append(Diagnostic(
                        "unclosed", f"The {ticks}{fence.lang} block opened on line "
                        f"{fence.line} was never closed, so it did not run; end it with a "
                        f"line of {ticks}.", fence.start, fence.line, fence.lang.split()[0],
                        codeblock=True))
                self._report_swallowed(fence, ticks)
            return None
        if self._think is not None:
            think = self._think
            hidden = self._slice(think.start, self._offset)
            if self._looks_like_a_call(hidden):
                self.diagnostics.append(Diagnostic(
                    "hidden", f"The {_THINK_TAGS[0 if think.close == '</think>' else 1]} "
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

    def _report_swallowed(self, fence: _Fence, ticks: str, content: str | None = None) -> None:
        """A diagnostic for each block opened inside ``fence``, which never closed (or, given
        its ``content``, which closed and holds no documents): each call written there was
        taken as the block's content and did not run."""
        closed = content is not None
        body = self._slice(fence.body, self._offset) if content is None else content
        line = fence.line or self._line_of(fence.start)
        for number, text in enumerate(body.split("\n"), line + 1):
            stripped = text.lstrip(" \t")
            if not stripped.startswith(_MARKERS):
                continue
            info = stripped.lstrip(stripped[0])
            if len(stripped) - len(info) < 3 or not _is_langtag(info):
                continue
            lang = info.strip()
            opened = f"the {ticks}{fence.lang} block" if fence.lang else f"a bare {ticks} block"
            if not closed:
                why, fix = "that was never closed", "close the outer block first"
            else:
                why, fix = "", "write it outside the other block to run it"
            self.diagnostics.append(Diagnostic(
                "swallowed", f"The {stripped.rstrip()} block on line {number} is inside "
                f"{opened} opened on line {line}{' ' if why else ''}{why}, so it was taken as "
                f"that block's text and did not run; {fix}.",
                fence.start, number, lang.split()[0], codeblock=True))

    def _next_line(self, offset: int) -> int:
        text = self._slice(offset, self._offset)
        newline = text.find("\n")
        return self._offset if newline == -1 else offset + newline + 1

    def _looks_like_a_call(self, text: str) -> bool:
        if "```" in text or "~~~" in text or any(opener in text for opener in self._tags):
            return True
        return any(span.opener.search(text) for spans in self._spans.values() for span in spans)

    # -- retained text -------------------------------------------------------------------

    def _slice(self, start: int, stop: int) -> str:
        """The text from ``start`` to ``stop``, joined from the kept regions it spans (only
        those parts are copied: a whole reply is one region, not copied again)."""
        last = self._kept[-1]
        last_base = self._offset - len(last)
        if start >= last_base:
            return last[start - last_base : stop - last_base]
        parts = []
        base = self._kept_base
        for piece in self._kept:
            end = base + len(piece)
            if end > start:
                parts.append(piece[max(0, start - base) : stop - base])
                if end >= stop:
                    break
            base = end
        return "".join(parts)

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

    def _trim_kept(self) -> None:
        keep_from = self._keep_from()
        if keep_from is None:
            self._kept = []
            self._kept_base = self._offset
            return
        while len(self._kept) > 1 and self._kept_base + len(self._kept[0]) <= keep_from:
            self._kept_base += len(self._kept.pop(0))
