"""Finding what matters in a region of text: fence lines, and the next of several needles.

A reply is mostly prose; these searches jump from one candidate to the next (a run of
backticks, a tag's opener) with ``str.find`` or ``memchr`` (see :mod:`._strings`), so the
lines between them are never looked at one by one.
"""

from __future__ import annotations

from ._strings import TOO_DENSE, find_first_of, find_literal

FenceLine = tuple[int, int, str, int]
"""A fence line: where the line starts, how many backticks (or tildes), the info string
after them, and where the line ends (its newline, or the end of the region). A plain tuple:
a reply of many small blocks makes two per block."""


def line_start_before(region: str, i: int) -> int:
    """Start of the line holding ``i`` if only blanks precede ``i`` on it, else -1 (a plain
    int: the fast loop asks it for every run of backticks, and compiled an optional int is
    boxed)."""
    if i == 0 or region[i - 1] == "\n":
        return i
    start = region.rfind("\n", 0, i) + 1
    return -1 if region[start:i].strip(" \t") else start


def end_of_line(region: str, i: int) -> int:
    """Where the line holding ``i`` ends: its newline, or the end of the region."""
    end = region.find("\n", i)
    return len(region) if end == -1 else end


def fence_line(region: str, line_start: int, at: int, char: str = "`") -> FenceLine:
    line_end = region.find("\n", at)
    if line_end == -1:
        line_end = len(region)
    info = region[at:line_end].lstrip(char)
    return line_start, line_end - at - len(info), info, line_end


def next_run(region: str, start: int) -> int:
    """Where the next run of 3+ backticks at or after ``start`` begins; the region's length
    if none does."""
    at = find_literal(region, "```", start)
    return len(region) if at == -1 else at


def find_fence(region: str, pos: int, marker: str) -> tuple[int, FenceLine] | None:
    """The next line at or after ``pos`` that starts with ``marker`` (3 backticks or
    tildes): where its backticks start, and the line."""
    while (i := find_literal(region, marker, pos)) != -1:
        line_start = line_start_before(region, i)
        if line_start != -1:
            return i, fence_line(region, line_start, i, marker[0])
        pos = end_of_line(region, i) + 1
    return None


NeedleGroups = tuple[tuple[str, ...], ...]
"""Needles grouped by their first character, each group in the order given."""


def needle_groups(needles: tuple[str, ...]) -> NeedleGroups:
    groups: dict[str, list[str]] = {}
    for needle in needles:
        groups.setdefault(needle[0], []).append(needle)
    return tuple(tuple(group) for group in groups.values())


class NeedleFinder:
    """The next occurrence of any of several literals.

    The needles that start with the same character are searched together
    (:func:`~._strings.find_first_of`), and where each group occurs next is cached, so a
    region is searched once per group however many tokens it holds (far faster than a regex
    alternation over prose). A group too dense in its first character for that is searched
    per needle with ``str.find`` from then on, each needle's next place cached (a needle
    that is not there is looked for once).
    """

    __slots__ = ("_at", "_found", "_groups", "_next", "_region", "mid_line_until")

    def __init__(self, region: str, groups: NeedleGroups):
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

    def line_start_before(self, at: int) -> int:
        if at < self.mid_line_until:
            return -1
        start = line_start_before(self._region, at)
        if start == -1:
            self.mid_line_until = end_of_line(self._region, at)
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
