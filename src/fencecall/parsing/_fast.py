"""The fast loop over fence lines: most of a reply read without a step per line.

Most of a reply is prose and code between fence lines, and most blocks are opened and closed
by a plain fence each. :func:`~._needles.next_run` jumps from one run of backticks to the next
(the lines between them are never looked at one by one), and a block opened and closed here
lives in local variables only: no object, and no line number (counted only if the block
outlives the region, for a diagnostic). Each fence line is decided by
:func:`~._fences.line_action` and each closed block goes out through
:meth:`~._state.ScanState._closed`, as on every other path. What the common rules do not
cover is left to the general step, at the run of backticks: a block that holds nested ones, a
bare fence whose next line is not here yet or opens an example, a glued fence, and, outside
blocks, any other needle (thinking, a tag, a span) that comes first.

Where the next run is stays known for the region (:attr:`FastFences._run_at`), so each run is
found once however often the general step takes over: the scan stays linear.
"""

from __future__ import annotations

from collections.abc import Sequence

from ._fences import (
    CLOSES,
    CONTENT,
    OPENS,
    Blocks,
    Fence,
    Found,
    closed_block,
    line_action,
    opens_container,
)
from ._needles import NeedleFinder, end_of_line, line_start_before, next_run
from ._state import FENCE, OUTSIDE, ScanState
from ._syntax import SpanSyntax, TagSyntax


class FastFences(ScanState):
    """:meth:`_scan_fences`, the fast loop, for the general scan to call first."""

    def __init__(self, blocks: Blocks, tags: Sequence[TagSyntax],
                 spans: Sequence[SpanSyntax], fast_paths: bool) -> None:
        super().__init__(blocks, tags, spans, fast_paths)
        self._run_at = -1
        """Where :meth:`_scan_fences` found the next run of backticks in the region being
        scanned (its length: none is left), so each run is found once; -1: not searched."""

    def _scan_fences(self, region: str, pos: int, base: int, out: list[Found],
                     finder: NeedleFinder) -> int:
        """Read the fence lines from ``pos`` on, as long as only the common rules apply;
        return where the general step must take over (or the end of the region)."""
        if not self._fast_paths:
            return pos
        held = self._fence
        if held is not None and (held.nested or held.pending_close is not None
                                 or held.marker != "```"):
            return pos
        ticks, lang, start, body, container = (0, "", 0, 0, False) if held is None else (
            held.ticks, held.lang, held.start, held.body, held.container)  # 0: none open
        size = len(region)
        # where the next run is, unless not searched yet or the general step went past it
        at = self._run_at if self._run_at >= pos else next_run(region, pos)
        stop = -1  # where the next other needle is, when outside a block (-1: not known)
        line_end = -1  # where the line of the run taken before ends (none yet)
        while True:
            if line_end != -1:  # that run is taken: on to the next
                at = next_run(region, line_end)
            if at >= size:  # no fence line follows
                if ticks or finder.find(pos, past_fences=True) is None:
                    pos = size
                break
            line_end = end_of_line(region, at + 3)
            line_start = line_start_before(region, at)
            if line_start == -1:
                continue  # not at the start of its line: prose or content
            info = region[at:line_end].lstrip("`")
            count = line_end - at - len(info)
            if not ticks:  # outside a block
                if stop < pos:
                    hit = finder.find(pos, past_fences=True)
                    stop = size if hit is None else hit[1]
                if at >= stop:
                    break  # the other needle comes first
                action = line_action("`", count, info, "`", 0, 0, False)
                if action != OPENS and action != CONTENT:
                    pos = at  # split, or thinking: the general rules
                    break
                pos = line_end
                if action == OPENS:
                    lang = info.strip()
                    ticks, start, body = count, base + at, base + pos + 1
                    container = opens_container(count, lang) and not self._viewer
                continue
            action = line_action("`", count, info, "`", ticks, 0, container, region, line_end,
                                 False)
            if action == CONTENT:
                continue
            if action != CLOSES:
                pos = at  # an example or nested block opens, a split, thinking, or waiting
                break
            pos = line_end
            self._fast_close(region, base, held if held is not None and held.start == start
                             else None, lang, start, body, line_start, line_end, out)
            ticks = 0
        self._run_at = at
        self._hold(held, ticks, lang, start, body, container)
        return pos

    def _fast_close(self, region: str, base: int, held: Fence | None, lang: str, start: int,
                    body: int, line_start: int, line_end: int, out: list[Found]) -> None:
        """The block opened at ``start`` closed at the fence line at ``line_start`` of the
        region (``held``: its open item, if it came from before the loop)."""
        if self._blocks == "none":
            return
        close = base + line_start - 1
        content = (region[body - base : close - base] if body >= base
                   else self._slice(body, close)) if close > body else ""
        if held is not None:
            self._closed(held, lang, start, content, base + line_end, out)
        else:  # a block opened in the loop held no nested one: nothing to report
            found = closed_block(self._blocks, lang, content, start, base + line_end)
            if found is not None:
                out.append(found)

    def _hold(self, held: Fence | None, ticks: int, lang: str, start: int, body: int,
              container: bool) -> None:
        """Leave the state as the loop ended: no block open, or the one open."""
        if not ticks:
            self._fence = None
            self._mode = OUTSIDE
        elif held is None or held.start != start:
            self._fence = Fence(ticks, lang, start, body, container, 0, [], viewer=self._viewer)
            self._mode = FENCE
