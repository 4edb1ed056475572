"""String searches for the compiled parsing core, in the forms mypyc compiles to direct C
calls.

Compiled, ``text.find(sub, start, end)`` is one call into CPython's search, while
``text.startswith(prefix, start)`` goes through Python's argument parsing, which costs more
than the comparison itself; a reply's calls are read with many such checks.
"""

from __future__ import annotations

from types import FunctionType
from typing import Final

_FIRST_CHAR_DENSITY = 32
""":func:`find_first_of` gives up once the needles' first character has turned up without a
needle more than once per this many characters on average (after a few such misses)."""

TOO_DENSE: Final = -2
""":func:`find_first_of`'s answer where a search per needle with ``str.find`` costs less."""


def starts_at(text: str, prefix: str, i: int) -> bool:
    """``text.startswith(prefix, i)`` for a non-empty ``prefix``."""
    return text.find(prefix, i, i + len(prefix)) == i


def find_literal(text: str, needle: str, pos: int) -> int:
    """``text.find(needle, pos)``, by way of the needle's first character where that is
    faster (see :func:`find_first_of`)."""
    at = find_first_of(text, (needle,), pos)[0]
    return text.find(needle, pos) if at == TOO_DENSE else at


def find_first_of(text: str, needles: tuple[str, ...], pos: int) -> tuple[int, str]:
    """Where the first of ``needles`` (which all start with the same character) occurs at or
    after ``pos``, and which; ``(-1, "")`` if none does; ``(TOO_DENSE, "")`` where a search
    per needle with ``str.find`` is the faster way to know.

    The first character is found with ``memchr``, many times faster than ``str.find`` scans
    for a longer needle, and in a reply the first characters of the needles (a backtick, a
    ``<``) are rare outside the needles themselves; one pass serves all the needles. Where
    they are not rare (markup, say) the search gives up after a few times the work
    ``str.find`` would have done. As plain Python, where a loop per character found costs
    more than a ``str.find``, it gives up at once.
    """
    if not COMPILED:
        return TOO_DENSE, ""
    first = needles[0][0]
    at = text.find(first, pos)
    misses = 0
    while at != -1:
        for needle in needles:
            if text.find(needle, at, at + len(needle)) == at:
                return at, needle
        misses += 1
        if misses >= 8 and at - pos < misses * _FIRST_CHAR_DENSITY:
            return TOO_DENSE, ""
        at = text.find(first, at + 1)
    return -1, ""


COMPILED: Final = not isinstance(starts_at, FunctionType)
"""Whether the parsing core runs compiled: its modules are compiled or run from source all
together (see :mod:`._compiled`), so this module's state is theirs. Some fast paths are fast
only compiled, and are skipped as plain Python."""
