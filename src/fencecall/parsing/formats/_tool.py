"""The tool format: native function calling, ``@name(call_id): {json}`` lines, and blocks.

A server whose own tool parser failed leaves the model's ``<tool_call>`` in the text content;
those calls are read here too (either body, see :mod:`._toolcall`), so they are not lost.
"""

from __future__ import annotations

import json
import re

from .._jsonscan import MAX_DEPTH, JsonEndScanner, too_deep
from .._scanner import Scanner
from .._syntax import Problem, Read, SpanSyntax
from ..model import ToolCall
from ..xmlcalls import NAME as TOOL_NAME
from ._toolcall import tool_call_tag
from .base import BlockCalls, CallScanner, UnrepresentableCall, check_name, check_named_only

NAME = "tool"
_CALL_ID_RE = re.compile(r"[^()\s]*")
_CALL_AT = re.compile(rf"@(?P<name>{TOOL_NAME})\((?P<id>[^()\s]*)\):[ \t]*(?=\{{)")
_DECODER = json.JSONDecoder(strict=False)
"""``json.loads(text, strict=False)`` makes a decoder per call; one does for all."""


def _label(match: re.Match[str]) -> str:
    return f"@{match.group('name')}({match.group('id')})"


def read_at_call(match: re.Match[str], text: str, start: int) -> tuple[Read]:
    """The call an ``@name(id): {json}`` span makes. Raw newlines and tabs in strings are
    accepted, as models write them."""
    name = match.group("name")
    if too_deep(text):
        return (Problem(start, _label(match), f"has arguments nested deeper than {MAX_DEPTH} "
                        "levels", name),)
    try:
        value = _DECODER.decode(text)  # an object: the span starts at its brace
    except (ValueError, RecursionError) as err:
        return (Problem(start, _label(match), f"has arguments that are not valid JSON ({err})",
                        name),)
    return (ToolCall(name, kwargs=value, call_id=match.group("id") or None, start=start,
                     format=NAME),)


def quick_at_call(match: re.Match[str], region: str, base: int) -> tuple[ToolCall, int] | None:
    """An ``@name(id): {json}`` call whose object is complete and valid JSON, read by the
    decoder alone: a valid object ends at the brace where brace counting ends it, so this is
    exactly the call the general reading makes. None otherwise (a problem, or more to come)."""
    try:
        value, end = _DECODER.raw_decode(region, match.end())
    except (ValueError, RecursionError):
        return None
    if too_deep(region, match.end(), end):
        return None
    name, call_id = match.group("name", "id")
    return ToolCall(name, "", "", value, call_id or None, base + match.start(), NAME,
                    base + end), end


AT_CALLS = SpanSyntax("@", _CALL_AT, JsonEndScanner, read_at_call, _label, quick_at_call)
LEFT_IN_CONTENT = (tool_call_tag(NAME),)
"""``<tool_call>`` tags a server did not turn into native calls."""


def render_at_call(call: ToolCall) -> str:
    """``@name(call_id): {json}``; positional text must first be mapped to parameters."""
    check_name(call.name)
    check_named_only(call, NAME)
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
        return BlockCalls(Scanner(blocks="call", tags=LEFT_IN_CONTENT, spans=(AT_CALLS,)))

    def render(self, call: ToolCall) -> str:
        return render_at_call(call)
