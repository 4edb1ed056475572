"""The ``<tool_call>`` tag open models write, read one way whichever body it holds.

Hermes and Qwen 2.5 put a JSON object in it (``{"name": "shell", "arguments": {…}}``); Qwen3
Coder puts ``<function=shell><parameter=command>ls</parameter></function>``. One reader
accepts both, so a model told one style that writes the other is still understood; each
format renders its own. What cannot be read becomes a :class:`Problem` that tells the model
what was wrong, never a call dropped in silence.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

from ..jsonscan import MAX_DEPTH, too_deep
from ..model import ToolCall
from ..syntax import Problem, Read, TagSyntax

OPENER = "<tool_call>"
CLOSING = "</tool_call>"
HERMES = "hermes"
QWEN3_CODER = "qwen3-coder"

_DECODER = json.JSONDecoder(strict=False)  # raw newlines and tabs in strings, as models write
_FUNCTION = re.compile(r"\s*<function=(?P<name>[^<>\n]*)>")
_PARAMETER = re.compile(r"\s*<parameter=(?P<name>[^<>\n]*)>")
_PARAMETER_CLOSE = "</parameter>"
_AFTER_PARAMETER = re.compile(r"\s*(?:<parameter=|</function>|$)")
_FUNCTION_CLOSE = re.compile(r"\s*</function>")
_JSON_SHAPE = '{"name": "TOOL", "arguments": {…}}'


def tool_call_tag(fmt: str | None) -> TagSyntax:
    """The ``<tool_call>`` syntax; its calls carry the format name ``fmt``, or, when None,
    the name of the style they were written in (``hermes`` or ``qwen3-coder``)."""
    return TagSyntax(OPENER, CLOSING, lambda body, at: read_tool_call(body, at, fmt))


def read_tool_call(body: str, offset: int, fmt: str | None) -> Iterator[Read]:
    """The calls in one ``<tool_call>`` body starting at ``offset``; problems are placed at
    the tag, whose line the model can find."""
    start = offset - len(OPENER)
    text = body.strip()
    if text.startswith("{"):
        yield _read_json(text, start, fmt or HERMES)
    elif text.startswith("<function="):
        yield from _read_functions(body, start, offset, fmt or QWEN3_CODER)
    elif not text:
        yield Problem(start, OPENER, f"is empty; write {_JSON_SHAPE} inside it")
    else:
        yield Problem(start, OPENER, f"holds neither a JSON object like {_JSON_SHAPE} nor "
                      "<function=TOOL>…</function>")


def _read_json(text: str, start: int, fmt: str) -> Read:
    if too_deep(text):
        return Problem(start, OPENER, f"holds JSON nested deeper than {MAX_DEPTH} levels")
    try:
        value, end = _DECODER.raw_decode(text)
    except (ValueError, RecursionError) as err:
        return Problem(start, OPENER, f"holds JSON that could not be read ({err})")
    if text[end:].strip():
        return Problem(start, OPENER, "holds text after its JSON object; write one call per "
                       "<tool_call>")
    name = value.get("name")  # an object: the text starts with its brace
    if not isinstance(name, str) or not name.strip():
        return Problem(start, OPENER, 'has no "name" string naming the tool')
    arguments = _arguments(value)
    if isinstance(arguments, str):
        return Problem(start, OPENER, f'for {name.strip()} {arguments}', name.strip())
    return ToolCall(name.strip(), kwargs=arguments, start=start, format=fmt)


def _arguments(call: Mapping[str, Any]) -> dict[str, Any] | str:
    """The call's arguments, or what is wrong with them. ``"parameters"`` is read like
    ``"arguments"`` (Llama's JSON calls), and a JSON string holding an object is unwrapped
    (OpenAI's wire form, which models copy)."""
    if "arguments" in call and "parameters" in call:
        return 'has both "arguments" and "parameters"; use "arguments" alone'
    key = "arguments" if "arguments" in call else "parameters"
    if key not in call:
        others = sorted(k for k in call if k != "name")
        if others:
            return (f'has no "arguments" but other keys ({", ".join(others)}); put the '
                    'arguments inside "arguments": {…}')
        return {}
    value = call[key]
    if value is None:
        return {}
    if isinstance(value, str):
        if too_deep(value):
            return f'has "{key}" as a string of JSON nested deeper than {MAX_DEPTH} levels'
        try:
            value = json.loads(value, strict=False)
        except (ValueError, RecursionError) as err:
            return f'has "{key}" as a string that is not JSON ({err}); write a JSON object'
    if not isinstance(value, dict):
        return f'has "{key}" that is {_kind(value)}, not a JSON object'
    return value


def _kind(value: object) -> str:
    if isinstance(value, str):
        return "a string"
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, list):
        return "a list"
    return "null"


def _read_functions(body: str, start: int, offset: int, fmt: str) -> Iterator[Read]:
    """``<function=NAME>`` elements, each holding ``<parameter=NAME>`` elements."""
    pos = 0
    while (m := _FUNCTION.match(body, pos)) is not None:
        name = m.group("name").strip()
        if not name:
            yield Problem(start, OPENER, "has a <function=> that names no tool")
            return
        read = _parameters(body, m.end())
        if isinstance(read, str):
            yield Problem(start, OPENER, f"has a <function={name}> {read}", name)
            return
        params, pos = read
        yield ToolCall(name, kwargs=params, start=offset + m.start("name") - len("<function="),
                       format=fmt)
    if body[pos:].strip():
        yield Problem(start, OPENER, "holds text that is not a <function=TOOL>…</function> "
                      "element")


def _parameters(body: str, pos: int) -> tuple[dict[str, str], int] | str:
    """A function's parameters and the position after its ``</function>``, or what is
    wrong. A value runs to the first ``</parameter>`` that is followed by another parameter
    or the function's end, so values may mention ``</parameter>`` themselves."""
    params: dict[str, str] = {}
    while (p := _PARAMETER.match(body, pos)) is not None:
        name = p.group("name").strip()
        if not name:
            return "with a <parameter=> that has no name"
        if name in params:
            return f"that sets <parameter={name}> twice"
        end = _parameter_end(body, p.end())
        if end == -1:
            return f"whose <parameter={name}> is never closed with {_PARAMETER_CLOSE}"
        params[name] = _value(body[p.end() : end])
        pos = end + len(_PARAMETER_CLOSE)
    close = _FUNCTION_CLOSE.match(body, pos)
    if close is not None:
        return params, close.end()
    if "</function>" not in body[pos:]:
        return "that is never closed with </function>"
    return "holding text that is not a <parameter=NAME>…</parameter> element"


def _parameter_end(body: str, pos: int) -> int:
    while (end := body.find(_PARAMETER_CLOSE, pos)) != -1:
        pos = end + len(_PARAMETER_CLOSE)
        if _AFTER_PARAMETER.match(body, pos):
            return end
    return -1


def _value(raw: str) -> str:
    """The text as written, less one newline after the opening and before the closing tag."""
    if raw.startswith("\n"):
        raw = raw[1:]
    return raw[:-1] if raw.endswith("\n") else raw
