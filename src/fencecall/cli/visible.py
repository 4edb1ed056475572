"""Text from a model or a tool, made safe to show in a terminal: what would be interpreted
is shown instead.

A hostile model can hide what runs behind characters a terminal acts on (``ESC [2K`` erases
a line, ``ESC [A`` moves the cursor up, ``\\r`` returns to the line's start, ``OSC … BEL``
sets the title) or that change how text reads (bidi overrides such as U+202E reverse it,
zero-width characters hide inside words). :func:`visible` replaces each of them with
something a person can see, so what is shown is what the text holds:

- C0 controls become their Unicode control pictures (ESC → ``␛``, so ``ESC[2K`` reads
  ``␛[2K``; BEL → ``␇``; backspace → ``␈``; ``\\r`` → ``␍``), except ``\\n`` and ``\\t``, which
  only lay text out. Every ``\\r`` is shown, even before ``\\n``: ``"a\\r\\n"`` reads ``a␍``
  and then a new line, so a carriage return never moves the cursor and a call is shown
  character for character.
- DEL → ``␡``.
- C1 controls (U+0080-U+009F; U+009B is CSI on some terminals, U+009D OSC) → ``<U+009B>``.
- Format characters (Unicode category Cf: bidi embeddings, overrides and isolates, U+200E/F,
  U+061C, zero-width space and joiners, word joiner, BOM, soft hyphen, tag characters …),
  the line and paragraph separators U+2028/U+2029, fillers that print as nothing, and lone
  surrogates → ``<U+202E>``-style escapes.

:func:`one_line` and :func:`clipped` shorten text for a line and say where they cut it.

It is one regex substitution with a table built once: the regex scans at C speed and only the
rare characters it finds cost a lookup, so it is cheap on long tool outputs. It is not idempotent
(``␛`` stays ``␛``; that is fine, nothing is interpreted either way).
"""

from __future__ import annotations

import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:
    from rich.text import Text

_KEEP = {"\n", "\t"}

_C0 = [(0x00, 0x1F)]
_C1 = [(0x80, 0x9F)]
_FORMAT = [  # Unicode category Cf (Unicode 15), all of it
    (0x00AD, 0x00AD), (0x0600, 0x0605), (0x061C, 0x061C), (0x06DD, 0x06DD),
    (0x070F, 0x070F), (0x0890, 0x0891), (0x08E2, 0x08E2), (0x180E, 0x180E),
    (0x200B, 0x200F), (0x202A, 0x202E), (0x2060, 0x2064), (0x2066, 0x206F),
    (0xFEFF, 0xFEFF), (0xFFF9, 0xFFFB), (0x110BD, 0x110BD), (0x110CD, 0x110CD),
    (0x13430, 0x1343F), (0x1BCA0, 0x1BCA3), (0x1D173, 0x1D17A), (0xE0001, 0xE0001),
    (0xE0020, 0xE007F),
]
_OTHER_INVISIBLE = [
    (0x2028, 0x2029),  # line and paragraph separators
    (0x034F, 0x034F),  # combining grapheme joiner
    (0x115F, 0x1160), (0x3164, 0x3164), (0xFFA0, 0xFFA0),  # Hangul fillers (print blank)
    (0x17B4, 0x17B5),  # Khmer inherent vowels (invisible)
    (0xD800, 0xDFFF),  # lone surrogates: cannot even be encoded for the terminal
]


def _code(cp: int) -> str:
    return f"<U+{cp:04X}>"


def _build_table() -> dict[int, str]:
    table: dict[int, str] = {}
    for low, high in _C0:
        for cp in range(low, high + 1):
            if chr(cp) not in _KEEP:
                table[cp] = chr(0x2400 + cp)  # ␀ … ␟, ESC → ␛, CR → ␍
    table[0x7F] = "\u2421"  # ␡
    for low, high in _C1 + _FORMAT + _OTHER_INVISIBLE:
        for cp in range(low, high + 1):
            table[cp] = _code(cp)
    return table


TABLE: dict[int, str] = _build_table()
"""Every code point :func:`visible` replaces, and what it becomes."""


def _char_class(codepoints: dict[int, str]) -> str:
    parts: list[str] = []
    ordered = sorted(codepoints)
    start = previous = ordered[0]
    for cp in [*ordered[1:], -1]:
        if cp == previous + 1:
            previous = cp
            continue
        parts.append(f"\\U{start:08x}" if start == previous
                     else f"\\U{start:08x}-\\U{previous:08x}")
        start = previous = cp
    return "[" + "".join(parts) + "]"


_UNSAFE = re.compile(_char_class(TABLE))
_BY_CHAR: dict[str, str] = {chr(cp): shown for cp, shown in TABLE.items()}


def _replace(match: re.Match[str]) -> str:
    return _BY_CHAR[match.group()]


def is_visible(text: str) -> bool:
    """Whether ``text`` holds nothing :func:`visible` would replace."""
    return _UNSAFE.search(text) is None


def visible(text: str) -> str:
    """``text`` with every character a terminal would interpret, or that changes how text
    reads, replaced by a visible stand-in (see the module docstring)."""
    return _UNSAFE.sub(_replace, text)


def visible_markup(text: str) -> str:
    """:func:`visible`, then escaped for rich markup (``[red]`` shows as written)."""
    from rich.markup import escape  # rich loads when something is shown with it

    return escape(visible(text))


def visible_text(text: str, style: str = "") -> Text:
    """A rich ``Text`` of :func:`visible` ``text``: no markup, no ``:emoji:`` codes."""
    from rich.text import Text

    return Text(visible(text), style=style)


def one_line(text: str, width: int) -> str:
    """``text`` as one line, for a title or a table cell: its first line that is not blank,
    cut at ``width`` characters with "…" where it was cut, then "(+N lines)" where more
    lines follow, so part of a command never passes for all of it. Lines end at ``\\n``
    only: a ``\\r`` or U+2028 stays in the line, where :func:`visible` shows it."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    if not lines:
        return ""
    more = len(lines) - 1
    return clipped(lines[0], width) + (f" (+{more} line{'s' * (more > 1)})" if more else "")


def clipped(text: str, width: int) -> str:
    """``text`` in at most ``width`` characters, the last one "…" where it was cut."""
    return text if len(text) <= width else text[: width - 1] + "…"


def _json_escape(match: re.Match[str]) -> str:
    cp = ord(match.group())
    if cp > 0xFFFF:  # a surrogate pair, as JSON writes characters beyond the BMP
        cp -= 0x10000
        return f"\\u{0xD800 + (cp >> 10):04x}\\u{0xDC00 + (cp & 0x3FF):04x}"
    return f"\\u{cp:04x}"


def json_visible(document: str) -> str:
    """A JSON document (as ``json.dumps`` writes it) with the characters :func:`visible`
    replaces written as ``\\uXXXX`` escapes instead: the same data for a JSON reader, and
    nothing a terminal interprets for a person reading it. ``ensure_ascii=False`` keeps
    DEL, C1 controls and bidi overrides raw; this catches them. Safe because ``json.dumps``
    writes those characters only inside strings, where any character may be escaped."""
    return _UNSAFE.sub(_json_escape, document)


def warn(text: str) -> None:
    """Say a warning once on stderr (the sandbox's fallback, an MCP server that failed)."""
    print(f"fencecall: warning: {visible(text)}", file=sys.stderr)
