"""The tool format: native function calling, ``@name(call_id): {json}`` lines, and blocks."""

from __future__ import annotations

import json
import re

from ..model import ToolCall
from ..scanner import Scanner
from .base import BlockCalls, CallScanner, UnrepresentableCall, check_name

NAME = "tool"
_CALL_ID_RE = re.compile(r"[^()\s]*")


def render_at_call(call: ToolCall) -> str:
    """``@name(call_id): {json}``; positional text must first be mapped to parameters."""
    check_name(call.name)
    if call.argline or call.content:
        raise UnrepresentableCall(
            "the tool format holds named arguments only; map args/content to parameters first"
        )
    call_id = call.call_id or ""
    if not _CALL_ID_RE.fullmatch(call_id):
        raise UnrepresentableCall(f"call id {call_id!r} may not hold spaces or parentheses")
    return f"@{call.name}({call_id}): {json.dumps(dict(call.kwargs), ensure_ascii=False)}"


class ToolTextFormat:
    """Calls travel natively; models without function calling write ``@name(id): {…}``."""

    name = NAME
    native = True
    named_arguments = True
    by_langtag = False
    preamble = (
        "You can use tools through function calling, or by writing a line "
        "@TOOL(CALL_ID): {JSON ARGUMENTS}. Results come back to you tagged with the call id."
    )

    def scanner(self) -> CallScanner:
        return BlockCalls(Scanner(blocks="call", at_calls=NAME))

    def render(self, call: ToolCall) -> str:
        return render_at_call(call)
