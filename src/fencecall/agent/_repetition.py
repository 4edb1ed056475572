"""Noticing a reply that repeats itself: small models can loop until the token limit."""

from __future__ import annotations

REPEATED_LINES = 8
"""The same non-blank line this many times in a row is a loop."""
REPEATED_UNIT = 12
"""A tail made of one short piece (up to ``LONGEST_UNIT`` characters) repeated this many
times, over at least ``SHORTEST_SPAN`` characters, is a loop even without line breaks (so a
ruler of 80 ``=`` is not)."""
LONGEST_UNIT = 64
SHORTEST_SPAN = 240
_CHECK_EVERY = 128


class RepetitionGuard:
    """Fed the reply as it streams; :meth:`feed` says what loops once it does."""

    def __init__(self) -> None:
        self._line: list[str] = []
        """The pieces of the line being written (joined once it ends: a long line streamed
        in small chunks must not be copied at each one)."""
        self._last: str | None = None
        self._count = 0
        self._tail = ""
        self._unchecked = 0

    def feed(self, text: str) -> str | None:
        """A description of the loop, or None."""
        found = self._lines(text)
        if found is not None:
            return found
        self._tail = (self._tail + text)[-max(LONGEST_UNIT * REPEATED_UNIT, SHORTEST_SPAN):]
        self._unchecked += len(text)
        if self._unchecked >= _CHECK_EVERY:
            self._unchecked = 0
            return self._units()
        return None

    def _lines(self, text: str) -> str | None:
        if "\n" not in text:
            self._line.append(text)
            return None
        first, *complete = text.split("\n")
        complete[:0] = ["".join((*self._line, first))]
        self._line = [complete.pop()]
        for line in complete:
            if not line.strip():
                continue
            if line == self._last:
                self._count += 1
                if self._count >= REPEATED_LINES:
                    return f"the line {_shown(line)} {self._count} times in a row"
            else:
                self._last, self._count = line, 1
        return None

    def _units(self) -> str | None:
        tail = self._tail
        for size in range(1, LONGEST_UNIT + 1):
            times = max(REPEATED_UNIT, -(-SHORTEST_SPAN // size))
            if len(tail) < size * times:
                break
            unit = tail[-size:]
            if unit.strip() and tail[-size * times:] == unit * times:
                return f"{_shown(unit)} over and over"
        return None


def _shown(text: str) -> str:
    text = text.strip()
    return repr(text if len(text) <= 60 else text[:57] + "...")
