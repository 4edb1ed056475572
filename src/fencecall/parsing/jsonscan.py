"""Find where a JSON object ends, resumably, without parsing it.

Used for ``@name(id): {json}`` calls: brace counting that understands strings and escapes, so
``{"a": "}"}`` ends at the right brace. It can be fed a stream piece by piece; each character is
looked at once, so the total cost is linear in the length of the object.
"""

from __future__ import annotations

import re

_OUTSIDE_STRING = re.compile(r'[{}"]')
_INSIDE_STRING = re.compile(r'["\\\n]')


class JsonEndScanner:
    """Tracks brace depth across calls to :meth:`scan`.

    A raw newline inside a string is invalid JSON; the scanner reports it so that a broken call
    cannot swallow the rest of a message.
    """

    __slots__ = ("_depth", "_escaped", "_in_string")

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escaped = False

    def scan(self, text: str, pos: int) -> tuple[str, int]:
        """Scan ``text`` from ``pos``.

        Returns ``("end", i)`` with ``i`` just past the closing brace, ``("more", len(text))``
        when the object continues beyond ``text``, or ``("invalid", i)`` at a raw newline inside
        a string.
        """
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
                ch = m.group()
                pos = m.end()
                if ch == '"':
                    self._in_string = False
                elif ch == "\\":
                    self._escaped = True
                else:
                    return "invalid", m.start()
                continue
            m = _OUTSIDE_STRING.search(text, pos)
            if m is None:
                return "more", end
            ch = m.group()
            pos = m.end()
            if ch == '"':
                self._in_string = True
            elif ch == "{":
                self._depth += 1
            else:
                self._depth -= 1
                if self._depth <= 0:
                    return "end", pos
        return "more", end
