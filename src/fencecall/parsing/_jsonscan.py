"""Find where a JSON object ends, resumably, without parsing it.

Used for ``@name(id): {json}`` calls: brace counting that understands strings and escapes, so
``{"a": "}"}`` ends at the right brace. Raw newlines and tabs inside strings are accepted
(models write them constantly; the object is then read with ``strict=False``). It can be fed
a stream piece by piece; each character is looked at once, so the total cost is linear in
the length of the object.
"""

from __future__ import annotations

import re
from typing import Literal

_INSIDE_STRING = re.compile(r'["\\]')
# A brace, or a whole string: its escapes skipped in one match, not one loop turn each. A
# string the text ends inside matches to the end (group 1 then is "" or a pending backslash).
_TOKEN = re.compile(r'[{}]|"[^"\\]*(?:\\.[^"\\]*)*("|\\?\Z)', re.S)


MAX_DEPTH = 100
"""How deeply a call's JSON may nest. Python 3.11's decoder gives up at a depth that depends
on how deep the caller's stack already is, so one object could be read in one place and
refused in another (whole text or streamed, quick or general reading); no reader decodes an
object nested deeper than this, and each says so the same way."""
_BRACKET_OR_STRING = re.compile(r'[\[\]{}]|"[^"\\]*(?:\\.[^"\\]*)*"', re.S)


def too_deep(text: str, start: int = 0, end: int | None = None) -> bool:
    """Whether the JSON in ``text[start:end]`` nests deeper than :data:`MAX_DEPTH` (brackets
    inside strings do not count). Costs two counts unless it holds that many brackets."""
    stop = len(text) if end is None else end
    if text.count("{", start, stop) + text.count("[", start, stop) <= MAX_DEPTH:
        return False
    depth = 0
    for m in _BRACKET_OR_STRING.finditer(text, start, stop):
        token = m.group()
        if token in ("{", "["):
            depth += 1
            if depth > MAX_DEPTH:
                return True
        elif token in ("}", "]"):
            depth -= 1
    return False


class JsonEndScanner:
    """Tracks brace depth across calls to :meth:`scan`."""

    __slots__ = ("_depth", "_escaped", "_in_string")

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escaped = False

    def scan(self, text: str, pos: int) -> tuple[Literal["end", "more"], int]:
        """Scan ``text`` from ``pos``: ``("end", i)`` with ``i`` just past the closing brace,
        or ``("more", len(text))`` when the object continues beyond ``text``."""
        end = len(text)
        while pos < end:
            if self._escaped:
                self._escaped = False
                pos += 1
                continue
            if self._in_string:
                m = _INSIDE_STRING.search(text, pos)
                if m is None:
                    return "more", end
                pos = m.end()
                if m.group() == '"':
                    self._in_string = False
                else:
                    self._escaped = True
                continue
            m = _TOKEN.search(text, pos)
            if m is None:
                return "more", end
            pos = m.end()
            closing = m.group(1)
            if closing is not None:  # a string
                if closing != '"':  # the text ends inside it
                    self._in_string = True
                    self._escaped = closing == "\\"
                    return "more", end
            elif text[pos - 1] == "{":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth <= 0:
                    return "end", pos
        return "more", end
