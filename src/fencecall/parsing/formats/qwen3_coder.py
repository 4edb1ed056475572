"""The qwen3-coder format: ``<tool_call><function=…><parameter=…>`` with raw text values.

What Qwen3-Coder is trained to write: values are taken as written, several lines included,
with no quoting or escaping. The tag is read by the shared :mod:`.toolcall` reader, so a
hermes JSON body in it is understood too.
"""

from __future__ import annotations

import json
import re

from ..model import ToolCall
from ..scanner import Scanner
from ..xmlcalls import CDATA_OPEN
from .base import (
    BlockCalls,
    CallScanner,
    UnrepresentableCall,
    check_name,
    check_named_only,
    check_text,
)
from .toolcall import CLOSING, OPENER, QWEN3_CODER, tool_call_tag

NAME = QWEN3_CODER
TAGS = (tool_call_tag(NAME),)
_ENDS_VALUE = re.compile(r"</parameter>\s*(?:<parameter=|</function>)")
_RISKY = (OPENER, CLOSING, CDATA_OPEN)


def _parameter_name(key: str) -> str:
    if not key or key != key.strip() or any(c in key for c in "<>\n\r"):
        raise UnrepresentableCall(f"{key!r} cannot be a <parameter=…> name")
    return key


def _value(value: object) -> str:
    """A value as raw text: strings as they are, anything else as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    check_text(text)
    if _ENDS_VALUE.search(text) or any(risky in text for risky in _RISKY):
        raise UnrepresentableCall("the value holds a closing tag that would end the call early; "
                                  "this format writes values unescaped")
    return text


def render_qwen3_coder(call: ToolCall) -> str:
    """One ``<tool_call>`` holding one ``<function=…>``, a ``<parameter=…>`` per argument."""
    check_name(call.name)
    check_named_only(call, NAME)
    params = "".join(f"<parameter={_parameter_name(key)}>\n{_value(value)}\n</parameter>\n"
                     for key, value in call.kwargs.items())
    return f"{OPENER}\n<function={call.name}>\n{params}</function>\n{CLOSING}"


class Qwen3CoderFormat:
    """``<function=…>`` calls in ``<tool_call>`` tags; code blocks are tracked only so that
    calls inside them never run."""

    name = NAME
    native = False
    named_arguments = True
    by_langtag = False
    preamble = (
        "You can use tools by writing <tool_call>, then <function=TOOL> and one "
        "<parameter=NAME> element per argument, each tag on a line of its own:\n"
        "<tool_call>\n<function=TOOL>\n<parameter=NAME>\nVALUE\n</parameter>\n</function>\n"
        "</tool_call>\nValues are taken as written, several lines included, with no quoting. "
        "Results come back to you as system messages."
    )

    def scanner(self) -> CallScanner:
        return BlockCalls(Scanner(blocks="none", tags=TAGS))

    def render(self, call: ToolCall) -> str:
        return render_qwen3_coder(call)
