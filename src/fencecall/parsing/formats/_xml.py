"""The XML format: ``<tool-use><shell>…</shell></tool-use>`` and ``<function_calls>``."""

from __future__ import annotations

import html
import json

from .._scanner import Scanner
from .._syntax import TagSyntax
from ..model import ToolCall
from ..xmlcalls import (
    CDATA_CLOSE,
    CDATA_OPEN,
    iter_function_calls,
    iter_tool_use,
    quick_tool_use,
)
from .base import (
    BlockCalls,
    CallScanner,
    UnrepresentableCall,
    check_argline,
    check_name,
    check_text,
    is_name,
)

NAME = "xml"
TAGS = (
    TagSyntax("<tool-use>", "</tool-use>", lambda body, at: iter_tool_use(body, at, NAME),
              lambda region, at, base: quick_tool_use(region, at, base, NAME)),
    TagSyntax("<function_calls>", "</function_calls>",
              lambda body, at: iter_function_calls(body, at, NAME)),
)


def _cdata(text: str) -> str:
    return CDATA_OPEN + text.replace(CDATA_CLOSE, "]]" + CDATA_CLOSE + CDATA_OPEN + ">") + \
        CDATA_CLOSE


def _xml_text(text: str, *tags: str) -> str:
    """``text`` as is, or in CDATA when it holds a tag that would end (or restart) the call."""
    check_text(text)
    risky = (CDATA_OPEN, *tags)
    return _cdata(text) if any(r in text for r in risky) else text


def _attr(value: str) -> str:
    return html.escape(value, quote=True).replace("\n", "&#10;").replace("\r", "&#13;")


def _as_text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def render_xml(call: ToolCall) -> str:
    """``<function_calls>`` for named arguments alone, ``<tool-use>`` otherwise."""
    check_name(call.name)
    if call.kwargs and not call.argline and not call.content:
        params = []
        for key, value in call.kwargs.items():
            text = _xml_text(_as_text(value), "</parameter>", "</invoke>", "</function_calls>",
                             "<function_calls>")
            if "\n" in text or "\r" in text:
                text = f"\n{text}\n"
            params.append(f'<parameter name="{_attr(key)}">{text}</parameter>')
        inner = "\n".join(params)
        return (f'<function_calls>\n<invoke name="{_attr(call.name)}">\n{inner}\n</invoke>\n'
                "</function_calls>")
    check_argline(call.argline)
    attrs = f' args="{_attr(call.argline)}"' if call.argline else ""
    for key, value in call.kwargs.items():
        if key == "args" or not is_name(key):
            raise UnrepresentableCall(f"{key!r} cannot be an XML attribute name")
        attrs += f' {key}="{_attr(_as_text(value))}"'
    body = _xml_text(call.content, f"</{call.name}>", "</tool-use>", "<tool-use>")
    return f"<tool-use>\n<{call.name}{attrs}>\n{body}\n</{call.name}>\n</tool-use>"


class XmlFormat:
    """XML blocks; code blocks are tracked only so that calls inside them never run."""

    name = NAME
    native = False
    named_arguments = False
    by_langtag = False
    preamble = (
        "You can use tools by writing <tool-use><TOOL args=\"ARGS\">CONTENT</TOOL></tool-use>, "
        "or <function_calls><invoke name=\"TOOL\"><parameter name=\"NAME\">VALUE</parameter>"
        "</invoke></function_calls>. Content is taken as written; wrap it in <![CDATA[...]]> if "
        "it contains the closing tag. Results come back to you as system messages."
    )

    def scanner(self) -> CallScanner:
        return BlockCalls(Scanner(blocks="none", tags=TAGS))

    def render(self, call: ToolCall) -> str:
        return render_xml(call)
