"""Write a :class:`ToolCall` back out in any format, so that parsing the result gives it back."""

from __future__ import annotations

import html
import json
import re

from .model import ToolCall, ToolFormat
from .xmlcalls import CDATA_CLOSE, CDATA_OPEN, NAME

_NAME_RE = re.compile(NAME)
_CALL_ID_RE = re.compile(r"[^()\s]*")
_LEADING_TICKS = re.compile(r"^[ \t]*(`+)", re.M)


class UnrepresentableCall(ValueError):
    """The call holds something the target format cannot express."""


def render(call: ToolCall, fmt: ToolFormat) -> str:
    """Render ``call`` in ``fmt``; raise :class:`UnrepresentableCall` when it cannot be."""
    if fmt is ToolFormat.MARKDOWN:
        return render_markdown(call)
    if fmt is ToolFormat.XML:
        return render_xml(call)
    return render_tool(call)


def fence_for(content: str) -> str:
    """Three backticks, or more when the content holds lines that start with backticks.

    The fence is longer than any backtick run that starts a content line, so those lines can
    never close the block; even lengths from six up are skipped because they read as glued.
    """
    longest = max((len(m.group(1)) for m in _LEADING_TICKS.finditer(content)), default=0)
    length = max(3, longest + 1)
    if length >= 6 and length % 2 == 0:
        length += 1
    return "`" * length


def render_markdown(call: ToolCall) -> str:
    if call.kwargs:
        raise UnrepresentableCall("markdown blocks cannot hold named arguments")
    _check_name(call.name)
    _check_argline(call.argline)
    fence = fence_for(call.content)
    langtag = f"{call.name} {call.argline}" if call.argline else call.name
    return f"{fence}{langtag}\n{call.content}\n{fence}"


def _cdata(text: str) -> str:
    return CDATA_OPEN + text.replace(CDATA_CLOSE, "]]" + CDATA_CLOSE + CDATA_OPEN + ">") + \
        CDATA_CLOSE


def _xml_text(text: str, *tags: str) -> str:
    """``text`` as is, or in CDATA when it holds a tag that would end (or restart) the call."""
    risky = (CDATA_OPEN, *tags)
    return _cdata(text) if any(r in text for r in risky) else text


def _attr(value: str) -> str:
    return html.escape(value, quote=True).replace("\n", "&#10;").replace("\r", "&#13;")


def render_xml(call: ToolCall) -> str:
    """``<function_calls>`` for named arguments alone, ``<tool-use>`` otherwise."""
    _check_name(call.name)
    if call.kwargs and not call.argline and not call.content:
        params = []
        for key, value in call.kwargs.items():
            text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
            text = _xml_text(text, "</parameter>", "</invoke>", "</function_calls>",
                             "<function_calls>")
            if "\n" in text or "\r" in text:
                text = f"\n{text}\n"
            params.append(f'<parameter name="{_attr(key)}">{text}</parameter>')
        inner = "\n".join(params)
        return (f'<function_calls>\n<invoke name="{_attr(call.name)}">\n{inner}\n</invoke>\n'
                "</function_calls>")
    _check_argline(call.argline)
    attrs = f' args="{_attr(call.argline)}"' if call.argline else ""
    for key, value in call.kwargs.items():
        if key == "args" or not _NAME_RE.fullmatch(key):
            raise UnrepresentableCall(f"{key!r} cannot be an XML attribute name")
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        attrs += f' {key}="{_attr(text)}"'
    body = _xml_text(call.content, f"</{call.name}>", "</tool-use>", "<tool-use>")
    return f"<tool-use>\n<{call.name}{attrs}>\n{body}\n</{call.name}>\n</tool-use>"


def render_tool(call: ToolCall) -> str:
    """``@name(call_id): {json}``; positional text must first be mapped to parameters."""
    _check_name(call.name)
    if call.argline or call.content:
        raise UnrepresentableCall(
            "the tool format holds named arguments only; map args/content to parameters first"
        )
    call_id = call.call_id or ""
    if not _CALL_ID_RE.fullmatch(call_id):
        raise UnrepresentableCall(f"call id {call_id!r} may not hold spaces or parentheses")
    return f"@{call.name}({call_id}): {json.dumps(dict(call.kwargs), ensure_ascii=False)}"


def _check_name(name: str) -> None:
    if not _NAME_RE.fullmatch(name):
        raise UnrepresentableCall(f"{name!r} is not a valid tool name")


def _check_argline(argline: str) -> None:
    if argline != argline.strip() or any(c in argline for c in "\n\r`"):
        raise UnrepresentableCall(f"argument line {argline!r} cannot be written on one line")
