"""Find where a Python bracket expression ends, resumably, without parsing it.

Used for pythonic calls (``[get_weather(city="Paris"), shell(command="ls")]``): bracket
counting over ``()``, ``[]`` and ``{}`` that understands Python's string literals (both quote
kinds, triple quotes, backslash escapes; prefixes such as ``r`` or ``f`` change nothing about
where a literal ends) and ``#`` comments, so ``[f(a="])")]`` ends at the right bracket. Fed
piece by piece, it looks at each character once: linear in the length of the expression.
Whether the text is valid Python is for :mod:`ast` to say once the end is found.

Quotes are read two ways side by side. Python's way ends a string at its first unescaped
closing quote. Models leave quotes unescaped inside strings (``command='sed -n '1,5p' a.py'``,
``text='it's'``), and then Python's reading runs past the list's last bracket, to the end of
the reply: the good calls before the broken one would be lost with it. So a lenient reading
runs beside it, where a quote ends a one-line string only if what follows it (after blanks)
can follow a value in a call (``,`` ``)`` ``]`` ``}`` ``:``, or the line's end); the expression
ends where either reading balances first. The two differ only after a quote that Python
closes a string at and the lenient reading does not, so a list Python's way reads ends where
it always did, unless a string already broken that way makes the lenient reading end it
sooner.
"""

from __future__ import annotations

import re
from typing import Literal

_OUTSIDE_STRING = re.compile(r"""[()\[\]{}"'#]""")
_OUTSIDE_STRING_OR_COMMA = re.compile(r"""[()\[\]{}"'#,]""")
_INSIDE_STRING = {'"': re.compile(r'["\\]'), "'": re.compile(r"['\\]")}
_NOT_BLANK = re.compile(r"[^ \t]")
_AFTER_A_VALUE = ",)]}:\n"
"""What can follow a string that ends a value in a call, for the lenient reading; or a line
end, as a one-line string cannot go on past it."""

Status = tuple[Literal["end", "more"], int]


class _Reading:
    """One reading of quotes (Python's, or the lenient one), resumable across pieces; it
    starts just after an opening bracket (depth 1). With ``commas``, it notes where the
    commas between the outermost bracket's elements stand."""

    __slots__ = ("_closing", "_comment", "_escaped", "_opening", "_outside", "_pending",
                 "_quote", "_triple", "commas", "depth", "fork", "kept", "lenient", "watch")

    def __init__(self, lenient: bool, commas: list[int] | None = None,
                 watch: bool = False) -> None:
        self.lenient = lenient
        self.commas = commas
        self.watch = watch
        self.fork: tuple[int, int, str] | None = None
        """Python's reading, watched: where the lenient one first parts from it (just after
        a closing quote), the depth there and the quote."""
        self._outside = _OUTSIDE_STRING if commas is None else _OUTSIDE_STRING_OR_COMMA
        self.depth = 1
        self.kept = 0
        """How many quotes Python would close a string at, kept inside it (lenient only)."""
        self._quote = ""
        """The quote character of the string being read, or "" outside strings."""
        self._triple = False
        self._opening = 0
        """Quotes seen so far of a string's opening run (1 or 2: single, empty or triple?)."""
        self._closing = 0
        """Quotes seen in a row inside a triple-quoted string (3 close it)."""
        self._escaped = False
        self._comment = False
        self._pending = False
        """After a quote that may close a one-line string: what follows decides (lenient)."""

    def parted(self) -> _Reading:
        """The lenient reading, as it stands where this watched one parts from it: in the
        string, waiting for what follows the quote to decide."""
        assert self.fork is not None
        lenient = _Reading(lenient=True)
        lenient.depth, lenient._quote, lenient._pending = self.fork[1], self.fork[2], True
        return lenient

    def scan(self, text: str, pos: int, stop: int) -> Status:
        """Scan ``text[pos:stop]``: ``("end", i)`` with ``i`` just past the bracket that
        balances the first, or ``("more", stop)``."""
        while pos < stop:
            if self._pending:
                pos = self._decide(text, pos, stop)
            elif self._opening:
                pos = self._open_string(text, pos, stop)
            elif self._comment:
                newline = text.find("\n", pos, stop)
                if newline == -1:
                    return "more", stop
                self._comment = False
                pos = newline + 1
            elif self._quote:
                pos = self._in_string(text, pos, stop)
            else:
                m = self._outside.search(text, pos, stop)
                if m is None:
                    return "more", stop
                pos = m.end()
                ch = m.group()
                if ch in "([{":
                    self.depth += 1
                elif ch in ")]}":
                    self.depth -= 1
                    if self.depth == 0:
                        return "end", pos
                elif ch == "#":
                    self._comment = True
                elif ch == ",":
                    if self.depth == 1 and self.commas is not None:
                        self.commas.append(m.start())
                else:
                    self._quote, self._opening = ch, 1
        return "more", stop

    def _open_string(self, text: str, pos: int, stop: int) -> int:
        """Decide, one character at a time, between ``'x'``, ``''`` and ``'''x'''``."""
        if text[pos] == self._quote:
            if self._opening == 1:
                self._opening = 2
            else:
                self._opening, self._triple = 0, True
            return pos + 1
        if self._opening == 2:  # an empty string: the character at ``pos`` follows it
            self._close(text, pos, stop)
        self._opening = 0
        return pos

    def _in_string(self, text: str, pos: int, stop: int) -> int:
        if self._escaped:
            self._escaped = False
            return pos + 1
        m = _INSIDE_STRING[self._quote].search(text, pos, stop)
        if m is None:
            self._closing = 0
            return stop
        if m.start() > pos:
            self._closing = 0
        if m.group() == "\\":
            self._escaped, self._closing = True, 0
        elif self._triple:
            self._closing += 1
            if self._closing == 3:
                self._quote, self._triple, self._closing = "", False, 0
        else:
            self._close(text, m.end(), stop)
        return m.end()

    def _close(self, text: str, pos: int, stop: int) -> None:
        """The quote before ``pos`` closes a one-line string, for Python; the lenient reading
        lets what follows decide. A watched reading notes where the two first part."""
        if self.lenient:
            self._pending = True
            return
        if self.watch and self.fork is None and not _follows_a_value(text, pos, stop):
            self.fork = (pos, self.depth, self._quote)
        self._quote = ""

    def _decide(self, text: str, pos: int, stop: int) -> int:
        """Whether the quote before ``pos`` closed its string: yes if the first character
        after the blanks can follow a value; else the quote was part of the string."""
        m = _NOT_BLANK.search(text, pos, stop)
        if m is None:
            return stop
        self._pending = False
        if text[m.start()] in _AFTER_A_VALUE:
            self._quote = ""
        else:
            self.kept += 1
        return m.start()


def _follows_a_value(text: str, pos: int, stop: int) -> bool:
    """Whether the first character from ``pos`` on, after blanks, can follow a string that
    ends a value (unknown before ``stop``: no)."""
    if pos < stop and text[pos] in _AFTER_A_VALUE:
        return True
    m = _NOT_BLANK.search(text, pos, stop)
    return m is not None and text[m.start()] in _AFTER_A_VALUE


class PyEndScanner:
    """Finds where a bracket expression ends, by whichever reading of quotes balances first
    (see the module); starts just after an opening bracket, as a span's opener has consumed
    it. The lenient reading is Python's until a quote the two read differently, so it is only
    made there, from Python's state: a list without such a quote is read once."""

    __slots__ = ("_lenient", "_python")

    def __init__(self) -> None:
        self._python = _Reading(lenient=False, watch=True)
        self._lenient: _Reading | None = None

    def scan(self, text: str, pos: int, stop: int | None = None) -> Status:
        """Scan ``text`` from ``pos`` (up to ``stop``, by default its end): ``("end", i)``
        with ``i`` just past the bracket that balances the first, or ``("more", stop)``
        when the expression goes on."""
        stop = len(text) if stop is None else stop
        status, at = self._python.scan(text, pos, stop)
        lenient = self._lenient
        if lenient is None and self._python.fork is not None:
            pos = self._python.fork[0]  # in this piece: it was noted just now
            lenient = self._lenient = self._python.parted()
        if lenient is not None:
            lenient_status, lenient_at = lenient.scan(text, pos, at)
            if lenient_status == "end":
                return lenient_status, lenient_at
        return status, at


def split_elements(text: str) -> list[str]:
    """The sources of the elements of the list whose text after its ``[`` is ``text``, split
    at the commas between them, as a reading that closes the list at the text's end reads
    them: the lenient one first (where the two differ, Python's reading has a string followed
    by what cannot follow a value, most likely a quote meant inside it), else Python's; where
    neither does (a list cut short), as Python's reads them all."""
    cuts: list[int] = []
    for lenient in (True, False):
        commas: list[int] = []
        status, at = _Reading(lenient, commas).scan(text, 0, len(text))
        if status == "end" and at == len(text):
            cuts = [*commas, at - 1]
            break
        if not lenient:
            cuts = [*commas, len(text)]
    elements = [text[a + 1 : b] for a, b in zip([-1, *cuts], cuts, strict=False)]
    return elements[:-1] if len(elements) > 1 and not elements[-1].strip() else elements


def misquoted(source: str) -> bool:
    """Whether ``source`` holds a quote that ends a string for Python but that the lenient
    reading keeps inside it: most likely a quote the model meant as part of the string."""
    reading = _Reading(lenient=True)
    reading.scan(source, 0, len(source))
    return reading.kept > 0
