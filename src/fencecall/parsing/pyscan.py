"""Find where a Python bracket expression ends, resumably, without parsing it.

Used for pythonic calls (``[get_weather(city="Paris"), shell(command="ls")]``): bracket
counting over ``()``, ``[]`` and ``{}`` that understands Python's string literals (both quote
kinds, triple quotes, backslash escapes; prefixes such as ``r`` or ``f`` change nothing about
where a literal ends) and ``#`` comments, so ``[f(a="])")]`` ends at the right bracket. Fed
piece by piece, it looks at each character once: linear in the length of the expression.
Whether the text is valid Python is for :mod:`ast` to say once the end is found.
"""

from __future__ import annotations

import re
from typing import Literal

_OUTSIDE_STRING = re.compile(r"""[()\[\]{}"'#]""")
_INSIDE_STRING = {'"': re.compile(r'["\\]'), "'": re.compile(r"['\\]")}


class PyEndScanner:
    """Tracks bracket depth across calls to :meth:`scan`; starts just after an opening
    bracket (depth 1), as a span's opener has consumed it."""

    __slots__ = ("_closing", "_comment", "_depth", "_escaped", "_opening", "_quote", "_triple")

    def __init__(self) -> None:
        self._depth = 1
        self._quote = ""
        """The quote character of the string being read, or "" outside strings."""
        self._triple = False
        self._opening = 0
        """Quotes seen so far of a string's opening run (1 or 2: single, empty or triple?)."""
        self._closing = 0
        """Quotes seen in a row inside a triple-quoted string (3 close it)."""
        self._escaped = False
        self._comment = False

    def scan(self, text: str, pos: int) -> tuple[Literal["end", "more"], int]:
        """Scan ``text`` from ``pos``: ``("end", i)`` with ``i`` just past the bracket that
        balances the first, or ``("more", len(text))`` when the expression goes on."""
        end = len(text)
        while pos < end:
            if self._opening:
                pos = self._open_string(text[pos], pos)
            elif self._comment:
                newline = text.find("\n", pos)
                if newline == -1:
                    return "more", end
                self._comment = False
                pos = newline + 1
            elif self._quote:
                pos = self._in_string(text, pos)
            else:
                m = _OUTSIDE_STRING.search(text, pos)
                if m is None:
                    return "more", end
                pos = m.end()
                ch = m.group()
                if ch in "([{":
                    self._depth += 1
                elif ch in ")]}":
                    self._depth -= 1
                    if self._depth == 0:
                        return "end", pos
                elif ch == "#":
                    self._comment = True
                else:
                    self._quote, self._opening = ch, 1
        return "more", end

    def _open_string(self, ch: str, pos: int) -> int:
        """Decide, one character at a time, between ``'x'``, ``''`` and ``'''x'''``."""
        if ch == self._quote:
            if self._opening == 1:
                self._opening = 2
            else:
                self._opening, self._triple = 0, True
            return pos + 1
        if self._opening == 2:  # an empty string: ``ch`` is outside it
            self._quote = ""
        self._opening = 0
        return pos

    def _in_string(self, text: str, pos: int) -> int:
        if self._escaped:
            self._escaped = False
            return pos + 1
        m = _INSIDE_STRING[self._quote].search(text, pos)
        if m is None:
            self._closing = 0
            return len(text)
        if m.start() > pos:
            self._closing = 0
        if m.group() == "\\":
            self._escaped, self._closing = True, 0
        elif not self._triple:
            self._quote = ""
        else:
            self._closing += 1
            if self._closing == 3:
                self._quote, self._triple, self._closing = "", False, 0
        return m.end()
