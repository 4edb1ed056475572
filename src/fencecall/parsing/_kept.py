"""The text a scanner has read: where reading is, the lines before it, and what is kept.

A scanner forgets text as soon as nothing open needs it, so streaming a long reply keeps only
the block (or tag, or span) that is still open. Line numbers are needed only for diagnostics,
so they are counted lazily: a whole reply without one is never counted at all.
"""

from __future__ import annotations


class KeptText:
    """Offsets, kept regions and line counting, the base of :class:`~._scanner.Scanner`."""

    def __init__(self) -> None:
        self._offset = 0
        """The end of the text scanned (or passed over) so far."""
        self._lines = 0
        """Newlines before the region being scanned (for diagnostics' line numbers), but for
        those in :attr:`_uncounted`."""
        self._uncounted: list[tuple[str, int]] = []
        """The last regions scanned, and from where their newlines are not counted yet."""
        self._region_base = 0
        self._region = ""
        self._counted_to = 0
        self._counted_lines = 0
        self._kept: list[str] = []
        """The regions that what is open still needs, the last one the region being read."""
        self._kept_base = 0

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

    def _keep(self, text: str) -> None:
        """Keep ``text``, which starts at the end of what is kept."""
        if not self._kept:
            self._kept_base = self._offset
        self._kept.append(text)

    def _trim_kept(self, keep_from: int | None) -> None:
        """Forget the kept regions wholly before ``keep_from`` (all of them, if None)."""
        if keep_from is None:
            self._kept = []
            self._kept_base = self._offset
            return
        while len(self._kept) > 1 and self._kept_base + len(self._kept[0]) <= keep_from:
            self._kept_base += len(self._kept.pop(0))

    def _start_region(self, region: str, base: int) -> None:
        self._region, self._region_base = region, base
        self._counted_to = self._counted_lines = 0
        if not self._kept:
            self._kept_base = base
        self._kept.append(region)

    def _end_region(self, region: str) -> None:
        """Count what the region's diagnostics counted, and leave the rest for later."""
        self._lines += self._counted_lines
        if self._counted_to < len(region):
            self._uncounted.append((region, self._counted_to))
            if len(self._uncounted) > 2:  # streaming: count as it goes, a region behind
                earlier, counted_to = self._uncounted.pop(0)
                self._lines += earlier.count("\n", counted_to)

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
        """Count the newlines of earlier regions that :meth:`_end_region` left uncounted."""
        for region, counted_to in self._uncounted:
            self._lines += region.count("\n", counted_to)
        self._uncounted = []

    def _lines_before(self) -> int:
        """Newlines before :attr:`_offset` (for a line number, outside a scan)."""
        if self._uncounted:
            self._count_lines()
        return self._lines

    def _next_line(self, offset: int) -> int:
        """Where the line after the one holding ``offset`` starts (the end, if none does)."""
        text = self._slice(offset, self._offset)
        newline = text.find("\n")
        return self._offset if newline == -1 else offset + newline + 1

    def _line_end(self, line_start: int) -> int:
        """Where the line starting at ``line_start`` ends (at its newline)."""
        if line_start >= self._region_base:
            newline = self._region.find("\n", line_start - self._region_base)
            if newline != -1:
                return self._region_base + newline
            return self._region_base + len(self._region)
        return self._next_line(line_start) - 1
