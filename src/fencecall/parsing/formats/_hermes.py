"""The hermes format: ``<tool_call>{"name": "shell", "arguments": {…}}</tool_call>``.

What Qwen 2.5, Hermes and many fine-tunes are trained to write. The tag is read by the shared
:mod:`._toolcall` reader, so a Qwen3-Coder style body in it is understood too, as is a bare
``<function=…>`` element at the start of a line (what Qwen 2.5 fine-tunes on SWE-agent's
protocol write).
"""

from __future__ import annotations

import json

from ..model import ToolCall
from ..xmlcalls import CDATA_OPEN
from ._toolcall import CLOSING, HERMES, OPENER, ToolCallFormat, function_span, tool_call_tag
from .base import check_name, check_named_only

NAME = HERMES
TAGS = (tool_call_tag(NAME),)
SPANS = (function_span(NAME),)
_RISKY = (OPENER, CLOSING, CDATA_OPEN)


def render_hermes(call: ToolCall) -> str:
    """One ``<tool_call>`` holding the call as JSON. A ``<`` that would end or restart the
    tag is written as ``\\u003c``, which JSON reads back as ``<``."""
    check_name(call.name)
    check_named_only(call, NAME)
    text = json.dumps({"name": call.name, "arguments": dict(call.kwargs)}, ensure_ascii=False)
    if any(risky in text for risky in _RISKY):
        text = text.replace("<", "\\u003c")  # JSON text holds "<" only inside strings
    return f"{OPENER}\n{text}\n{CLOSING}"


class HermesFormat(ToolCallFormat):
    """JSON calls in ``<tool_call>`` tags (and ``<function=…>`` calls, in them or bare)."""

    name = NAME
    tags = TAGS
    spans = SPANS
    preamble = (
        'You can use tools by writing <tool_call>{"name": "TOOL", "arguments": {JSON '
        "ARGUMENTS}}</tool_call>: one call per <tool_call> block, and several blocks for "
        "several calls. Results come back to you as system messages."
    )

    def render(self, call: ToolCall) -> str:
        return render_hermes(call)
