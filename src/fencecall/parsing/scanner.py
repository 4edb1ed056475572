"""The one scanning engine behind every parser entry point.

Text arrives in chunks. Only complete lines are scanned, and each exactly once: a region of
new complete lines is searched with a regular expression that jumps straight to the lines that
matter (fences, thinking tags, call openers), so prose costs little and feeding a reply chunk
by chunk costs O(total length). Parsing a whole text is the same machine fed once, which is
why whole-text and streaming results are equal by construction.

Fence rules (see ``docs`` in the README for examples):

* A line whose first non-blank characters are 3+ backticks is a fence; its info string (the
  langtag) may not contain a backtick, so ```` ```x``` ```` inline is prose.
* Inside a block opened with L backticks, fences shorter than L are content. A fence with a
  langtag and at least L backticks opens a nested block; a bare fence closes the innermost
  nested block, and a bare fence of exactly L with nothing nested closes the block itself.
* Whether such a bare fence opens or closes is decided by the following line, but only for
  blocks that hold documents (a ``markdown``/``md`` langtag or a ``.md`` path, or a block that
  already held a nested one): there a bare fence followed by a line of text opens a nested
  block. Everywhere else, a bare fence of the right length closes.
* ````````shell`` (a closing fence glued to an opening one) is split into the two.
* ``<thinking>…</thinking>`` and ``<think>…</think>`` are skipped; an unclosed one hides the
  rest of the text; a closing tag without an opening one is dropped.
* A block is final only once the line after its closing fence has begun, so a streaming
  consumer never sees a half-written block.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from enum import Enum, auto
from typing import Literal, NamedTuple

from .jsonscan import JsonEndScanner
from .model import FENCED, Codeblock, ToolCall
from .xmlcalls import (
    CDATA_CLOSE,
    CDATA_OPEN,
    NAME,
    find_outside_cdata,
    iter_function_calls,
    iter_tool_use,
)

_CALL_AT = re.compile(rf"@(?P<name>{NAME})\((?P<id>[^()\s]*)\):[ \t]*(?=\{{)")
_XML_OPENERS = ("<tool-use>", "<function_calls>")
# A langtag whose first word is a document language, or whose last word is a document path.
_DOCUMENT_LANGTAG = re.compile(r"(?i)^(?:markdown|md|mdx|rst)(?:\s|$)|\.(?:md|markdown|mdx|rst)$")

Found = Codeblock | ToolCall


class _FenceLine(NamedTuple):
    line_start: int
    ticks_at: int
    ticks: int
    info: str
    line_end: int


def _line_start_before(region: str, i: int) -> int | None:
    """Start of the line holding ``i`` if only blanks precede ``i`` on it, else None."""
    start = region.rfind("\n", 0, i) + 1
    return start if start == i or not region[start:i].strip(" \t") else None


def _line_end(region: str, i: int) -> int:
    end = region.find("\n", i)
    return len(region) if end == -1 else end


def _fence_line(region: str, line_start: int, at: int) -> _FenceLine:
    line_end = _line_end(region, at)
    rest = region[at:line_end]
    info = rest.lstrip("`")
    return _FenceLine(line_start, at, len(rest) - len(info), info, line_end)


def _find_fence(region: str, pos: int) -> _FenceLine | None:
    """The next line at or after ``pos`` that starts with 3+ backticks."""
    while (i := region.find("```", pos)) != -1:
        line_start = _line_start_before(region, i)
        if line_start is not None:
            return _fence_line(region, line_start, i)
        pos = _line_end(region, i) + 1
    return None


class _NeedleFinder:
    """The next occurrence of any of several literals, each searched with ``str.find``.

    Positions are cached per needle, so a region is searched once per needle however many
    tokens it holds (``str.find`` is far faster than a regex alternation over prose).
    """

    __slots__ = ("_next", "_region", "mid_line_until")

    def __init__(self, region: str, needles: tuple[str, ...]):
        self._region = region
        self._next = dict.fromkeys(needles, -2)
        self.mid_line_until = -1
        """Offsets below this are known not to start a line (saves rescanning long lines)."""

    def line_start_before(self, at: int) -> int | None:
        if at < self.mid_line_until:
            return None
        start = _line_start_before(self._region, at)
        if start is None:
            self.mid_line_until = _line_end(self._region, at)
        return start

    def find(self, pos: int) -> tuple[str, int] | None:
        best: tuple[str, int] | None = None
        for needle, at in self._next.items():
            if at != -1 and at < pos:
                at = self._region.find(needle, pos)
                self._next[needle] = at
            if at != -1 and (best is None or at < best[1]):
                best = (needle, at)
        return best


class _Mode(Enum):
    OUTSIDE = auto()
    FENCE = auto()
    THINK = auto()
    XML = auto()
    CALL = auto()


def _holds_documents(lang: str) -> bool:
    return _DOCUMENT_LANGTAG.search(lang) is not None


def _is_glued(ticks: int, info: str) -> bool:
    return ticks >= 6 and ticks % 2 == 0 and info[:1] not in ("", " ", "\t", "`")


@dataclass(slots=True)
class _Fence:
    ticks: int
    lang: str
    start: int
    body: int
    container: bool
    nested: list[int] = field(default_factory=list)
    pending_close: int | None = None


@dataclass(slots=True)
class _Call:
    name: str
    call_id: str | None
    start: int
    brace: int
    json_end: JsonEndScanner = field(default_factory=JsonEndScanner)


@dataclass(slots=True)
class _Xml:
    closing: str
    body: int
    in_cdata: bool = False


class Scanner:
    """Finds code blocks and tool calls in text fed chunk by chunk.

    ``feed`` returns what became certain with that chunk; ``finish`` returns the rest once the
    text is complete. ``blocks`` says how code blocks are reported: as :class:`Codeblock`,
    as :class:`ToolCall` (blocks with a langtag, named by its first word), or not at all (the
    ``xml`` format tracks them only to ignore calls written inside them). ``xml`` and
    ``at_calls`` switch on the other two syntaxes; their value is the format name stamped on
    the calls found in them.
    """

    def __init__(self, *, blocks: Literal["codeblock", "call", "none"] = "codeblock",
                 xml: str | None = None, at_calls: str | None = None):
        self._needles = ("```", "<think", *(_XML_OPENERS if xml else ()),
                         *(("@",) if at_calls else ()))
        self._xml_format = xml or ""
        self._at_format = at_calls or ""
        self._blocks = blocks
        self._mode = _Mode.OUTSIDE
        self._fence: _Fence | None = None
        self._think_close = ""
        self._call: _Call | None = None
        self._xml: _Xml | None = None
        self._offset = 0
        self._partial: list[str] = []
        self._kept: list[str] = []
        self._kept_base = 0
        self._finished = False

    # -- feeding -------------------------------------------------------------------------

    def feed(self, chunk: str) -> list[Found]:
        """Add text; return the blocks and calls that are now complete."""
        if self._finished:
            raise RuntimeError("feed() after finish()")
        newline = chunk.rfind("\n")
        if newline == -1:
            if chunk:
                self._partial.append(chunk)
            return []
        head = chunk[: newline + 1]
        if self._partial:
            self._partial.append(head)
            head = "".join(self._partial)
            self._partial = []
        if newline + 1 < len(chunk):
            self._partial.append(chunk[newline + 1 :])
        return self._scan(head, final=False)

    def finish(self) -> list[Found]:
        """Declare the text complete; return what the end of the text completed."""
        if self._finished:
            return []
        tail = "".join(self._partial)
        self._partial = []
        self._finished = True
        return self._scan(tail, final=True)

    # -- scanning ------------------------------------------------------------------------

    def _scan(self, region: str, final: bool) -> list[Found]:
        base = self._offset
        self._offset += len(region)
        if not self._kept:
            self._kept_base = base
        self._kept.append(region)
        out: list[Found] = []
        end = len(region)
        pos = 0
        finder = _NeedleFinder(region, self._needles)
        fence = self._fence
        if fence is not None and fence.pending_close is not None:
            self._decide_pending(fence, region, 0, base, final, out)
        while pos < end:
            mode = self._mode
            if mode is _Mode.OUTSIDE:
                pos = self._scan_outside(region, pos, base, finder)
            elif mode is _Mode.FENCE:
                pos = self._scan_fence(region, pos, base, final, out)
            elif mode is _Mode.THINK:
                hit = region.find(self._think_close, pos)
                if hit == -1:
                    break
                pos = hit + len(self._think_close)
                self._mode = _Mode.OUTSIDE
            elif mode is _Mode.XML:
                pos = self._scan_xml(region, pos, base, out)
            else:
                pos = self._scan_call(region, pos, base, out)
        self._trim_kept()
        return out

    def _scan_outside(self, region: str, pos: int, base: int, finder: _NeedleFinder) -> int:
        hit = finder.find(pos)
        if hit is None:
            return len(region)
        needle, at = hit
        line_start = finder.line_start_before(at) if needle in ("```", "@") else at
        if line_start is None:
            return at + len(needle)
        if needle == "```":
            line = _fence_line(region, line_start, at)
            start = base + at
            ticks, info = line.ticks, line.info
            if _is_glued(ticks, info):
                ticks //= 2
                start += ticks
            elif "`" in info:
                return line.line_end
            self._open_fence(ticks, info.strip(), start, base + line.line_end + 1)
            return line.line_end
        if needle == "<think":
            for tag in ("<think>", "<thinking>"):
                if region.startswith(tag, at):
                    self._mode = _Mode.THINK
                    self._think_close = "</" + tag[1:]
                    return at + len(tag)
            return at + 1
        if needle == "@":
            m = _CALL_AT.match(region, at)
            if m is None:
                return at + 1
            self._call = _Call(m.group("name"), m.group("id") or None, base + at, base + m.end())
            self._mode = _Mode.CALL
            return m.end()
        self._xml = _Xml("</" + needle[1:], base + at + len(needle))
        self._mode = _Mode.XML
        return at + len(needle)

    def _open_fence(self, ticks: int, lang: str, start: int, body: int) -> None:
        container = ticks == 3 and _holds_documents(lang)
        self._fence = _Fence(ticks, lang, start, body, container)
        self._mode = _Mode.FENCE

    def _scan_fence(self, region: str, pos: int, base: int, final: bool,
                    out: list[Found]) -> int:
        fence = self._fence
        assert fence is not None
        line = _find_fence(region, pos)
        if line is None:
            return len(region)
        ticks, info = line.ticks, line.info
        line_start = base + line.line_start
        if _is_glued(ticks, info):
            half = ticks // 2
            self._bare_fence(fence, half, line_start, region, base, final, out, glued=True)
            if self._mode is _Mode.OUTSIDE:
                self._open_fence(half, info.strip(), base + line.ticks_at + half,
                                 base + line.line_end + 1)
            elif half >= fence.ticks:
                fence.nested.append(half)
                fence.container = True
        elif "`" in info:
            pass
        elif info.strip():
            if ticks >= fence.ticks:
                fence.nested.append(ticks)
                fence.container = True
        else:
            self._bare_fence(fence, ticks, line_start, region, base, final, out, glued=False)
        return line.line_end

    def _bare_fence(self, fence: _Fence, ticks: int, line_start: int, region: str, base: int,
                    final: bool, out: list[Found], *, glued: bool) -> None:
        if ticks < fence.ticks:
            return
        if fence.nested:
            if ticks >= fence.nested[-1]:
                fence.nested.pop()
            return
        if ticks > fence.ticks:
            fence.nested.append(ticks)
            fence.container = True
            return
        if not fence.container or glued:
            self._close_fence(fence, line_start, out)
            return
        fence.pending_close = line_start
        line_end = region.find("\n", line_start - base)
        next_line = len(region) if line_end == -1 else line_end + 1
        self._decide_pending(fence, region, next_line, base, final, out)

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
            kind = "close" if not stripped or stripped.startswith("```") else "open"
        if kind == "open":
            fence.pending_close = None
            fence.nested.append(fence.ticks)
        else:
            self._close_fence(fence, fence.pending_close, out)

    def _close_fence(self, fence: _Fence, line_start: int, out: list[Found]) -> None:
        content = self._slice(fence.body, line_start - 1) if line_start - 1 > fence.body else ""
        self._fence = None
        self._mode = _Mode.OUTSIDE
        if self._blocks == "codeblock":
            out.append(Codeblock(fence.lang, content, fence.start))
        elif self._blocks == "call" and fence.lang:
            words = fence.lang.split(None, 1)
            out.append(ToolCall(words[0], words[1] if len(words) == 2 else "", content,
                                start=fence.start, format=FENCED))

    def _scan_xml(self, region: str, pos: int, base: int, out: list[Found]) -> int:
        xml = self._xml
        assert xml is not None
        while True:
            if xml.in_cdata:
                close = region.find(CDATA_CLOSE, pos)
                if close == -1:
                    return len(region)
                pos = close + len(CDATA_CLOSE)
                xml.in_cdata = False
            hit = region.find(xml.closing, pos)
            cdata = region.find(CDATA_OPEN, pos, len(region) if hit == -1 else hit)
            if cdata != -1:
                xml.in_cdata = True
                pos = cdata + len(CDATA_OPEN)
                continue
            if hit == -1:
                return len(region)
            body = self._slice(xml.body, base + hit)
            offset = xml.body
            # An opener that was only mentioned ("the `<tool-use>` tag") is superseded by the
            # real one that follows it before the closing tag.
            opener = "<" + xml.closing[2:]
            skip = 0
            while (again := find_outside_cdata(body, opener, skip)) != -1:
                skip = again + len(opener)
            if skip:
                body, offset = body[skip:], offset + skip
            parse = iter_tool_use if xml.closing == "</tool-use>" else iter_function_calls
            out.extend(parse(body, offset, self._xml_format))
            self._xml = None
            self._mode = _Mode.OUTSIDE
            return hit + len(xml.closing)

    def _scan_call(self, region: str, pos: int, base: int, out: list[Found]) -> int:
        call = self._call
        assert call is not None
        status, index = call.json_end.scan(region, pos)
        if status == "more":
            return index
        self._call = None
        self._mode = _Mode.OUTSIDE
        if status == "end":
            try:
                value = json.loads(self._slice(call.brace, base + index))
            except ValueError:
                value = None
            if isinstance(value, dict):
                out.append(ToolCall(call.name, kwargs=value, call_id=call.call_id,
                                    start=call.start, format=self._at_format))
        return index

    # -- retained text -------------------------------------------------------------------

    def _slice(self, start: int, stop: int) -> str:
        last = self._kept[-1]
        last_base = self._offset - len(last)
        if start >= last_base:
            return last[start - last_base : stop - last_base]
        if len(self._kept) > 1:
            self._kept = ["".join(self._kept)]
        return self._kept[0][start - self._kept_base : stop - self._kept_base]

    def _keep_from(self) -> int | None:
        if self._fence is not None:
            return self._fence.body
        if self._xml is not None:
            return self._xml.body
        if self._call is not None:
            return self._call.brace
        return None

    def _trim_kept(self) -> None:
        keep_from = self._keep_from()
        if keep_from is None:
            self._kept = []
            self._kept_base = self._offset
            return
        while len(self._kept) > 1 and self._kept_base + len(self._kept[0]) <= keep_from:
            self._kept_base += len(self._kept.pop(0))
