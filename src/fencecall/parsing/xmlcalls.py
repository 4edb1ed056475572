"""Read the inside of ``<tool-use>`` and ``<function_calls>`` blocks.

Not an XML parser on purpose: models put raw code in these blocks (``a < b``, ``<filename>``,
HTML), which a strict parser rejects or mangles. Instead a child runs from its opening tag to
the first matching closing tag that is followed by nothing but another child or the end of
the block, and ``<![CDATA[…]]>`` sections are honoured, so any content can be written safely.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator

from ._strings import COMPILED, starts_at
from ._syntax import Problem, Read
from .model import ToolCall

NAME = r"[A-Za-z_][\w.\-]*"
_ATTRS = r"(?P<attrs>(?:\s+[\w.\-:]+\s*=\s*(?:\"[^\"]*\"|'[^']*'))*)"
_CHILD_OPEN = re.compile(rf"\s*<(?P<name>{NAME}){_ATTRS}\s*(?P<selfclose>/?)>")
_ATTR = re.compile(r"([\w.\-:]+)\s*=\s*(?:\"([^\"]*)\"|'([^']*)')")
_INVOKE_OPEN = re.compile(rf"\s*<invoke{_ATTRS}\s*>")
_PARAM_OPEN = re.compile(rf"\s*<parameter{_ATTRS}\s*(?P<selfclose>/?)>")
_NEXT_CHILD = re.compile(rf"\s*(?:$|<{NAME}[\s/>])")
_INVOKE_END = re.compile(r"\s*</invoke>")

CDATA_OPEN = "<![CDATA["
CDATA_CLOSE = "]]>"


def find_outside_cdata(text: str, needle: str, pos: int) -> int:
    """Index of ``needle`` in ``text`` at or after ``pos``, skipping CDATA sections; -1 if none.

    The needle's position is searched again only once a CDATA section has passed it, so many
    sections before the needle cost one pass over the text, not one pass each.
    """
    hit = -2
    while True:
        if hit != -1 and hit < pos:
            hit = text.find(needle, pos)
        cdata = text.find(CDATA_OPEN, pos, hit if hit != -1 else len(text))
        if cdata == -1:
            return hit
        close = text.find(CDATA_CLOSE, cdata + len(CDATA_OPEN))
        if close == -1:
            return -1
        pos = close + len(CDATA_CLOSE)


def unwrap_text(raw: str) -> str:
    """Drop one newline after the opening and before the closing tag, then unwrap CDATA."""
    if raw.startswith("\n"):
        raw = raw[1:]
    if raw.endswith("\n"):
        raw = raw[:-1]
    if raw.startswith(CDATA_OPEN) and raw.endswith(CDATA_CLOSE):
        parts: list[str] = []
        pos = 0
        while pos < len(raw):
            if not starts_at(raw, CDATA_OPEN, pos):
                return raw
            close = raw.find(CDATA_CLOSE, pos + len(CDATA_OPEN))
            if close == -1:
                return raw
            parts.append(raw[pos + len(CDATA_OPEN) : close])
            pos = close + len(CDATA_CLOSE)
        return "".join(parts)
    return raw


def _attributes(attrs: str) -> dict[str, str]:
    if not attrs:
        return {}
    return {
        m.group(1): html.unescape(m.group(2) if m.group(2) is not None else m.group(3))
        for m in _ATTR.finditer(attrs)
    }


def iter_tool_use(body: str, offset: int, fmt: str) -> Iterator[Read]:
    """Calls in the body of ``<tool-use>…</tool-use>``; ``offset`` is the body's position,
    ``fmt`` the format name the calls carry. What cannot be read is a :class:`Problem`."""
    pos = 0
    while (m := _CHILD_OPEN.match(body, pos)) is not None:
        name = m.group("name")
        attributes = _attributes(m.group("attrs"))
        argline = attributes.pop("args", "").strip()
        start = offset + m.start("name") - 1
        if m.group("selfclose"):
            yield ToolCall(name, argline, "", attributes, start=start, format=fmt)
            pos = m.end()
            continue
        closing = f"</{name}>"
        end = _closing_before_next_child(body, closing, m.end())
        if end == -1:
            yield Problem(start, f"<{name}>", f"is never closed with {closing}", name)
            return
        content = unwrap_text(body[m.end() : end])
        yield ToolCall(name, argline, content, attributes, start=start, format=fmt)
        pos = end + len(closing)
    if body[pos:].strip():
        yield Problem(offset + pos, "<tool-use>", "holds text that is not a tool element; "
                      "write <TOOL>content</TOOL> inside <tool-use>")


# A whole ``<tool-use>`` call of one element whose text holds no ``<`` (nor do its attribute
# values): the common call, which the general reading would take the same way.
_PLAIN_TOOL_USE = re.compile(
    rf"<tool-use>\s*<({NAME})((?:\s+[\w.\-:]+\s*=\s*(?:\"[^\"<]*\"|'[^'<]*'))*)\s*>"
    r"([^<]*)</\1>\s*</tool-use>")


def quick_tool_use(region: str, at: int, base: int, fmt: str) -> tuple[ToolCall, int] | None:
    """The call of a plain ``<tool-use>`` block at ``at`` read in one step (its ``end`` set),
    and where the block ends in ``region``; None where the general reading must decide
    (CDATA, markup in the text, several elements, a block not closed yet).

    Nothing in such a block can be CDATA, a second opener or an earlier closing tag (every
    ``<`` in it belongs to its four tags; an element named ``tool-use`` is left to the
    general reading, as its closing tag would end the block), so what the general reading
    makes of it is exactly this one call. Compiled, a block of one element without
    attributes is read without the regular expression (:func:`quick_bare_tool_use`).
    """
    read = quick_bare_tool_use(region, at, base, fmt) if COMPILED else None
    return read if read is not None else quick_plain_tool_use(region, at, base, fmt)


def quick_plain_tool_use(region: str, at: int, base: int,
                        fmt: str) -> tuple[ToolCall, int] | None:
    """:func:`quick_tool_use` by one regular expression match."""
    m = _PLAIN_TOOL_USE.match(region, at)
    if m is None:
        return None
    name, attrs, text = m.groups()
    if name == "tool-use":
        return None
    attributes = _attributes(attrs)
    argline = attributes.pop("args", "").strip()
    end = m.end()
    return ToolCall(name, argline, unwrap_text(text), attributes, None, base + m.start(1) - 1,
                    fmt, base + end), end


_MAX_QUICK_NAME = 64
"""A longer tool name is left to the regular expression (so a ``<tool-use>`` without a
``>`` soon after it costs little)."""


def quick_bare_tool_use(region: str, at: int, base: int,
                        fmt: str) -> tuple[ToolCall, int] | None:
    """:func:`quick_plain_tool_use` for the commonest block, ``<tool-use>`` around one
    element without attributes (``<shell>``) whose text holds no ``<``, read with a few
    finds instead of the regular expression: a subset of what that matches (blanks only of
    ``" \t\n"`` between the tags, an ASCII name), read the same way; None for the rest."""
    i = _skip_blanks(region, at + len("<tool-use>"))
    gt = region.find(">", i + 1, i + 2 + _MAX_QUICK_NAME)
    if gt == -1 or not starts_at(region, "<", i) or not _is_plain_name(region, i + 1, gt):
        return None
    name = region[i + 1 : gt]
    if name == "tool-use":
        return None
    lt = region.find("<", gt + 1)
    if lt == -1 or not (starts_at(region, "</", lt) and starts_at(region, name, lt + 2)
                        and starts_at(region, ">", lt + 2 + len(name))):
        return None
    close = _skip_blanks(region, lt + 3 + len(name))
    if not starts_at(region, "</tool-use>", close):
        return None
    end = close + len("</tool-use>")
    text, text_end = gt + 1, lt  # as unwrap_text has it: no CDATA, as the text has no "<"
    if text < text_end and region[text] == "\n":
        text += 1
    if text < text_end and region[text_end - 1] == "\n":
        text_end -= 1
    return ToolCall(name, "", region[text:text_end], None, None, base + i, fmt,
                    base + end), end


def _skip_blanks(text: str, i: int) -> int:
    size = len(text)
    while i < size:
        c = text[i]
        if c != "\n" and c != " " and c != "\t":
            break
        i += 1
    return i


def _is_plain_name(text: str, start: int, end: int) -> bool:
    r"""Whether ``text[start:end]`` is an ASCII :data:`NAME` (``[A-Za-z_][\w.\-]*``), checked
    without a regular expression or a copy."""
    if start >= end:
        return False
    for i in range(start, end):
        c = ord(text[i])
        if not (97 <= c <= 122 or 65 <= c <= 90 or c == 95  # a-z A-Z _
                or (i > start and (48 <= c <= 57 or c == 45 or c == 46))):  # 0-9 - .
            return False
    return True


def _closing_before_next_child(body: str, closing: str, search: int) -> int:
    """The closing tag that is followed by nothing but another child or the end."""
    while True:
        end = find_outside_cdata(body, closing, search)
        if end == -1 or _NEXT_CHILD.match(body, end + len(closing)):
            return end
        search = end + len(closing)


def iter_function_calls(body: str, offset: int, fmt: str) -> Iterator[Read]:
    """Calls in the body of ``<function_calls>``: ``<invoke name=…>`` holding
    ``<parameter name=…>`` elements, or raw text that fills the tool's content parameter."""
    pos = 0
    while (m := _INVOKE_OPEN.match(body, pos)) is not None:
        name = _attributes(m.group("attrs")).get("name", "")
        start = offset + m.start() + (len(m.group()) - len(m.group().lstrip()))
        label = f'<invoke name="{name}">'
        if not name:
            yield Problem(start, "<invoke>", "has no name attribute")
            return
        read = _invoke_body(body, m.end())
        if isinstance(read, str):
            yield Problem(start, label, read, name)
            return
        params, content, pos = read
        yield ToolCall(name, content=content, kwargs=params, start=start, format=fmt)
    if body[pos:].strip():
        yield Problem(offset + pos, "<function_calls>", "holds text that is not an <invoke> "
                      "element")


def _invoke_body(body: str, pos: int) -> tuple[dict[str, str], str, int] | str:
    """(parameters, raw text, position after ``</invoke>``), or what was wrong."""
    params: dict[str, str] = {}
    while (p := _PARAM_OPEN.match(body, pos)) is not None:
        pname = _attributes(p.group("attrs")).get("name", "")
        if p.group("selfclose"):
            params[pname] = ""
            pos = p.end()
            continue
        end = find_outside_cdata(body, "</parameter>", p.end())
        if end == -1:
            return f'has a <parameter name="{pname}"> that is never closed'
        params[pname] = unwrap_text(body[p.end() : end])
        pos = end + len("</parameter>")
    close = _INVOKE_END.match(body, pos)
    if close is not None:
        return params, "", close.end()
    end = find_outside_cdata(body, "</invoke>", pos)
    if end == -1:
        return "is never closed with </invoke>"
    if params:
        return "mixes <parameter> elements with other text"
    return params, unwrap_text(body[pos:end].strip(" \t")), end + len("</invoke>")
