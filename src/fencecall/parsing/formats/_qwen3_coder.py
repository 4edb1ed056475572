"""The qwen3-coder format: ``<tool_call><function=…><parameter=…>`` with raw text values.

What Qwen3-Coder is trained to write: values are taken as written, several lines included,
with no quoting or escaping. The tag is read by the shared :mod:`._toolcall` reader, so a
hermes JSON body in it is understood too, and so is a ``<function=…>`` element written at the
start of a line without the tag (as models fine-tuned on SWE-agent's protocol write them).
"""

from __future__ import annotations

import json

from .._scanner import Scanner
from ..model import ToolCall
from ._toolcall import (
    CLOSING,
    OPENER,
    QWEN3_CODER,
    ToolCallFormat,
    function_span,
    tool_call_tag,
)
from .base import UnrepresentableCall, check_name, check_named_only, check_text

NAME = QWEN3_CODER
TAGS = (tool_call_tag(NAME),)
SPANS = (function_span(NAME),)


def _parameter_name(key: str) -> str:
    if not key or key != key.strip() or any(c in key for c in "<>\n\r"):
        raise UnrepresentableCall(f"{key!r} cannot be a <parameter=…> name")
    return key


def _value(value: object) -> str:
    """A value as raw text: strings as they are, anything else as JSON."""
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
    check_text(text)
    return text


def render_qwen3_coder(call: ToolCall) -> str:
    """One ``<tool_call>`` holding one ``<function=…>``, a ``<parameter=…>`` per argument.

    Values are written unescaped, so the text is read back: a value holding tags the reading
    takes for the call's own (``</parameter>`` then ``<parameter=``, ``</tool_call>``...)
    cannot be written, and :class:`UnrepresentableCall` says so."""
    check_name(call.name)
    check_named_only(call, NAME)
    values = {_parameter_name(key): _value(value) for key, value in call.kwargs.items()}
    params = "".join(f"<parameter={key}>\n{value}\n</parameter>\n"
                     for key, value in values.items())
    text = f"{OPENER}\n<function={call.name}>\n{params}</function>\n{CLOSING}"
    read = Scanner(blocks="none", tags=TAGS).parse(text)
    if len(read) != 1 or not isinstance(read[0], ToolCall) or read[0].kwargs != values:
        raise UnrepresentableCall("a value holds tags that would be read as the call's own; "
                                  "this format writes values unescaped")
    return text


class Qwen3CoderFormat(ToolCallFormat):
    """``<function=…>`` calls, in ``<tool_call>`` tags or bare at the start of a line."""

    name = NAME
    tags = TAGS
    spans = SPANS
    preamble = (
        "You can use tools by writing <tool_call>, then <function=TOOL> and one "
        "<parameter=NAME> element per argument, each tag on a line of its own:\n"
        "<tool_call>\n<function=TOOL>\n<parameter=NAME>\nVALUE\n</parameter>\n</function>\n"
        "</tool_call>\nValues are taken as written, several lines included, with no quoting. "
        "Results come back to you as system messages."
    )

    def render(self, call: ToolCall) -> str:
        return render_qwen3_coder(call)
