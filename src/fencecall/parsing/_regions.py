"""The general step: a region of complete lines scanned with every rule.

A region is searched with :class:`~._needles.NeedleFinder`, which jumps straight to what
matters in the current mode (a fence, a thinking tag, a call's opener or closer); the fast
loop over fence lines (:mod:`._fast`) takes it first wherever only the common rules apply.
At the end of the text, what is still open is reported, and after a call that never ends the
rest is read again so the calls after it are found.
"""

from __future__ import annotations

from ._fast import FastFences
from ._fences import (
    CLOSES,
    CONTENT,
    OPENS,
    SPLITS,
    THINKS,
    WAITS,
    Fence,
    Found,
    line_action,
)
from ._needles import NeedleFinder, fence_line, find_fence
from ._state import (
    FENCE,
    MAX_REREADS,
    OUTSIDE,
    SPAN,
    TAG,
    THINK,
    THINK_TAGS,
    OpenSpan,
    OpenTag,
    OpenThinking,
)
from ._strings import starts_at
from .model import Diagnostic
from .xmlcalls import CDATA_CLOSE, CDATA_OPEN, find_outside_cdata


class RegionScanner(FastFences):
    """Scans regions of complete lines with the general rules."""

    def _scan(self, region: str, final: bool) -> list[Found]:
        base = self._offset
        self._offset += len(region)
        return self._scan_region(region, base, final)

    def _scan_region(self, region: str, base: int, final: bool) -> list[Found]:
        self._start_region(region, base)
        out: list[Found] = []
        end = len(region)
        pos = 0
        finder = NeedleFinder(region, self._tables.needle_groups)
        self._run_at = -1
        fence = self._fence
        if fence is not None and fence.pending_close is not None:
            self._decide_pending(fence, region, base, final, out)
        hit: tuple[str, int] | None = None
        while pos < end:
            mode = self._mode
            if mode is FENCE or (mode is OUTSIDE and (hit := finder.find(pos))
                                 is not None and hit[0] == "```"):
                pos = self._scan_fences(region, pos, base, out, finder)
                if pos >= end:
                    break
                mode = self._mode  # what the fast loop left to the step below
                if mode is OUTSIDE:
                    hit = finder.find(pos)
            if mode is OUTSIDE:
                if hit is None:
                    break
                pos = self._scan_outside(region, hit, base, finder, out)
            elif mode is FENCE:
                pos = self._scan_fence(region, pos, base, final, out)
            elif mode is THINK:
                pos = self._scan_think(region, pos)
            elif mode is TAG:
                pos = self._scan_tag(region, pos, base, out)
            else:
                pos = self._scan_span(region, pos, base, out)
        for held in (self._fence, self._think, self._tag, self._span):
            if held is not None and not held.line:  # it outlives the region that held it
                held.line = self._line_of(held.start)
        self._end_region(region)
        self._trim_kept(self._keep_from())
        return out

    def _scan_outside(self, region: str, hit: tuple[str, int], base: int,
                      finder: NeedleFinder, out: list[Found]) -> int:
        """Take the needle ``hit`` (the first at or after the position reached)."""
        needle, at = hit
        line_start = finder.line_start_before(at) \
            if needle in self._tables.line_start_needles else at
        if line_start == -1:
            return at + len(needle)
        if needle == "```" or needle == "~~~":
            return self._outside_fence(region, line_start, at, base, needle)
        if needle == "<think":
            for tag in THINK_TAGS:
                if starts_at(region, tag, at):
                    self._think = OpenThinking("</" + tag[1:], base + at, 0)
                    self._mode = THINK
                    return at + len(tag)
            return at + 1
        tag_syntax = self._tags.get(needle)
        if tag_syntax is not None:
            if tag_syntax.quick is not None and self._fast_paths:
                read = tag_syntax.quick(region, at, base)
                if read is not None:
                    out.append(read[0])
                    return read[1]
            self._tag = OpenTag(tag_syntax, base + at, base + at + len(needle), 0)
            self._mode = TAG
            return at + len(needle)
        return self._outside_span(region, needle, at, base, out)

    def _outside_fence(self, region: str, line_start: int, at: int, base: int,
                       needle: str) -> int:
        char = needle[0]
        _, ticks, info, line_end = fence_line(region, line_start, at, char)
        start = base + at
        action = line_action(char, ticks, info, char, 0, 0, False)
        if action == CONTENT:
            return line_end
        if action == THINKS:
            return self._open_glued_thinking(region, at + ticks, info, base + at)
        if action == SPLITS:
            ticks //= 2
            start += ticks
        self._open_fence(ticks, info.strip(), start, base + line_end + 1, needle)
        return line_end

    def _outside_span(self, region: str, needle: str, at: int, base: int,
                      out: list[Found]) -> int:
        for span in self._spans[needle]:
            m = span.opener.match(region, at)
            if m is not None:
                if span.quick is not None and self._fast_paths:
                    read = span.quick(m, region, base)
                    if read is not None:
                        out.append(read[0])
                        return read[1]
                line_end = region.find("\n", at)
                self._span = OpenSpan(span, m, base + at, base + m.end(), 0,
                                      base + (len(region) if line_end == -1 else line_end + 1),
                                      span.end())
                self._mode = SPAN
                return m.end()
        return at + len(needle)

    def _scan_think(self, region: str, pos: int) -> int:
        think = self._think
        assert think is not None
        hit = region.find(think.close, pos)
        if hit == -1:
            return len(region)
        self._think = None
        self._mode = OUTSIDE
        return hit + len(think.close)

    def _scan_fence(self, region: str, pos: int, base: int, final: bool,
                    out: list[Found]) -> int:
        fence = self._fence
        assert fence is not None
        marker = fence.marker
        found = find_fence(region, pos, marker)
        if found is None:
            return len(region)
        ticks_at, (line_start, ticks, info, line_end) = found
        line_start += base
        char = marker[0]
        action = fence.action(ticks, info, char, region, line_end, final)
        if action == CLOSES:
            self._close_fence(fence, line_start, out, base + line_end)  # the common case
        elif fence.nests(action, ticks, line_start):
            pass
        elif action == WAITS:
            fence.pending_close = line_start
        elif action == SPLITS:
            return self._split_in(fence, region, ticks_at, ticks, info, line_start, line_end,
                                  base, out)
        elif action == THINKS:  # it closes, and the thinking glued to it is read after
            self._close_fence(fence, line_start, out)
            return self._open_glued_thinking(region, ticks_at + ticks, info, base + ticks_at)
        return line_end

    def _split_in(self, fence: Fence, region: str, ticks_at: int, ticks: int, info: str,
                  line_start: int, line_end: int, base: int, out: list[Found]) -> int:
        """A glued fence (````````shell``) in ``fence``: its first half closes what it can
        close, and its second half opens a block."""
        half = ticks // 2
        closing = fence.action(half, "", fence.marker[0])  # as at the end: it closes
        if closing == CLOSES:  # glued: it closes
            self._close_fence(fence, line_start, out)
            self._open_fence(half, info.strip(), base + ticks_at + half, base + line_end + 1)
            return line_end
        fence.nests(closing, half, line_start)
        if half >= fence.ticks:
            fence.nests(OPENS, half, line_start)
        return line_end

    def _decide_pending(self, fence: Fence, region: str, base: int, final: bool,
                        out: list[Found]) -> None:
        """Settle a bare fence whose next line had not come by that line (the region's
        first)."""
        close = fence.pending_close
        assert close is not None
        action = fence.action(fence.ticks, "", fence.marker[0], region, -1, final)
        if action != WAITS:
            fence.pending_close = None
            if not fence.nests(action, fence.ticks, close):
                self._close_fence(fence, close, out)

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
            self._read_tag(tag, base + hit, out)
            return hit + len(closing)

    def _read_tag(self, tag: OpenTag, hit: int, out: list[Found]) -> None:
        """Read the calls of ``tag``, whose closing tag is at ``hit``."""
        body = self._slice(tag.body, hit)
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
            self._take(item, tag.line, out, hit + len(tag.syntax.closing), tag.start)
        self._tag = None
        self._mode = OUTSIDE

    def _scan_span(self, region: str, pos: int, base: int, out: list[Found]) -> int:
        span = self._span
        assert span is not None
        status, index = span.end.scan(region, pos)
        if status == "more":
            return index
        self._span = None
        self._mode = OUTSIDE
        text = self._slice(span.body, base + index)
        for item in span.syntax.read(span.match, text, span.start):
            self._take(item, span.line, out, base + index, span.start)
        return index

    # -- the end of the text -------------------------------------------------------------

    def _end_of_text(self, out: list[Found]) -> None:
        """Report what the end left open; after a tag or span that never ended, read the text
        after its first line again, so the calls it swallowed are found. A file block that
        never closed because a bare fence inside it was read as opening an example closes at
        that fence instead, and the rest is read again: past :data:`MAX_REREADS` of those,
        every bare fence closes from there on, so the rest is read once."""
        rereads = fallbacks = 0
        while True:
            restart = self._fall_back(out)
            if restart is not None:
                fallbacks += 1
                if fallbacks > MAX_REREADS and not self._viewer:
                    self._viewer = True
                    self._note_viewer_reading(*restart)
            else:
                restart = self._report_unfinished()
                if restart is None:
                    return
                if rereads == MAX_REREADS:
                    self.diagnostics.append(Diagnostic(
                        "unread", f"After line {restart[1]} the reply was not read for more "
                        f"calls: it holds more than {MAX_REREADS} broken ones.", restart[0],
                        restart[1] + 1))
                    return
                rereads += 1
            self._read_again(*restart, out)

    def _note_viewer_reading(self, offset: int, lines_before: int) -> None:
        self.diagnostics.append(Diagnostic(
            "ambiguous", f"From line {lines_before + 1} on, every bare fence was read as "
            f"closing its block, as a markdown viewer shows it: the reply holds more than "
            f"{MAX_REREADS} file blocks whose bare fences could open or close them.",
            offset, lines_before + 1))

    def _read_again(self, offset: int, lines_before: int, out: list[Found]) -> None:
        """Read the text from ``offset`` (after ``lines_before`` lines) to the end again."""
        text = self._slice(offset, self._offset)
        self._mode = OUTSIDE
        self._tag = self._span = None
        self._kept = []
        self._lines = lines_before
        self._uncounted = []
        out.extend(self._scan_region(text, offset, final=True))
