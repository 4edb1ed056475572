"""The ``<tool_call>`` tag open models write, read one way whichever body it holds, and the
bare ``<function=…>`` element some write without it.

Hermes and Qwen 2.5 put a JSON object in it (``{"name": "shell", "arguments": {…}}``); Qwen3
Coder puts ``<function=shell><parameter=command>ls</parameter></function>``. One reader
accepts both, so a model told one style that writes the other is still understood; each
format renders its own. Models fine-tuned on SWE-agent's protocol (and Qwen3 Coder, now and
then) write the ``<function=…>`` element alone, at the start of a line; :func:`function_span`
reads those. What cannot be read becomes a :class:`Problem` that tells the model what was
wrong, never a call dropped in silence.

Values are raw text, so where one ends is decided by structure, the same way in a tag and in
a bare element: a value ends at the first ``</parameter>`` that is followed by the next
``<parameter=``, by ``</function>`` or by the end of the tag, and that closes no
``<parameter=`` the value opened itself at the start of one of its lines. So a value may
quote the tags (a file that holds ``</parameter>``, or a whole example call in a bare
element; in a tag, a quoted ``<tool_call>`` is the scanner's to read); it is cut short only
where it quotes ``</parameter>`` followed by ``<parameter=`` or ``</function>``, which is how
the value would end. A value with no such end in a tag was never closed: it ends, as vLLM
reads it, at the next ``<parameter=`` at a line's start, else at ``</function>``, and the rest
of the tag is read that plain way too. A bare element needs its closing tags, as nothing else
bounds it and a reply cut off mid-call must not run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from typing import Any, Literal

from .._jsonscan import MAX_DEPTH, too_deep
from .._scanner import Scanner
from .._syntax import Problem, Read, SpanSyntax, TagSyntax
from ..model import ToolCall
from ..xmlcalls import NAME
from .base import BlockCalls, CallScanner

OPENER = "<tool_call>"
CLOSING = "</tool_call>"
HERMES = "hermes"
QWEN3_CODER = "qwen3-coder"

_DECODER = json.JSONDecoder(strict=False)  # raw newlines and tabs in strings, as models write
_FUNCTION_OPENER = re.compile(r"<function=(?P<name>[^<>\n]*)>")
_FUNCTION = re.compile(r"[ \t\r\n]*<function=(?P<name>[^<>\n]*)>")
_PARAMETER = re.compile(r"[ \t\r\n]*<parameter=(?P<name>[^<>\n]*)>")
_PARAMETER_OPEN = "<parameter="
_PARAMETER_CLOSE = "</parameter>"
_FUNCTION_CLOSE_TAG = "</function>"
_FUNCTION_CLOSE = re.compile(r"[ \t\r\n]*</function>")
_IN_VALUE = re.compile(r"</parameter>|^[ \t]*<parameter=", re.MULTILINE)
"""What decides where a value ends: closing tags, and opening tags at a line's start."""
_AFTER_VALUE = re.compile(r"[ \t\r\n]*(?:<parameter=|</function>|\Z)")
_PLAIN_END = re.compile(r"</parameter>|^[ \t]*<parameter=|</function>", re.MULTILINE)
_TOOL_NAME = re.compile(NAME)
_JSON_SHAPE = '{"name": "TOOL", "arguments": {…}}'


class ToolCallFormat:
    """What the hermes and qwen3-coder formats share: both read ``<tool_call>`` tags (with
    ``tags``) whichever body they hold, and bare ``<function=…>`` elements (with ``spans``),
    as calls of named arguments; code blocks are tracked only so that calls inside them never
    run. Each renders its own body."""

    native = False
    named_arguments = True
    by_langtag = False
    tags: tuple[TagSyntax, ...]
    spans: tuple[SpanSyntax, ...]

    def scanner(self) -> CallScanner:
        return BlockCalls(Scanner(blocks="none", tags=self.tags, spans=self.spans))


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
    pos, plain = 0, False
    while (m := _FUNCTION.match(body, pos)) is not None:
        name = m.group("name").strip()
        read = _element(body, m.end(), name, plain)
        if isinstance(read, str):
            yield Problem(start, OPENER, f"has a <function={name}> that {read}",
                          name if _TOOL_NAME.fullmatch(name) else None)
            return
        params, pos, plain = read
        yield ToolCall(name, kwargs=params, start=offset + m.start("name") - len("<function="),
                       format=fmt)
    if body[pos:].strip():
        yield Problem(start, OPENER, "holds text that is not a <function=TOOL>…</function> "
                      "element")


def _element(body: str, pos: int, name: str,
             plain: bool) -> tuple[dict[str, str], int, bool] | str:
    """The parameters of the element named ``name`` whose tag ends at ``pos``, where its
    ``</function>`` ends, and whether the plain reading took over (see the module); or what
    is wrong, said of the element ("sets <parameter=a> twice")."""
    if not name:
        return "names no tool"
    if not _TOOL_NAME.fullmatch(name):
        return "has a name no tool can have"
    params: dict[str, str] = {}
    while (p := _PARAMETER.match(body, pos)) is not None:
        key = p.group("name").strip()
        if not key:
            return "has a <parameter=> with no name"
        if key in params:
            return f"sets <parameter={key}> twice"
        ends = None if plain else _value_end(body, p.end())
        if ends is None:
            plain = True
            ends = _plain_value_end(body, p.end())
        end, pos = ends
        params[key] = _value(body[p.end() : end])
    close = _FUNCTION_CLOSE.match(body, pos)
    if close is not None:
        return params, close.end(), plain
    if body.find(_FUNCTION_CLOSE_TAG, pos) == -1:
        return f"is never closed with {_FUNCTION_CLOSE_TAG}"
    return "holds text that is not a <parameter=NAME>…</parameter> element"


def _value_end(body: str, pos: int) -> tuple[int, int] | None:
    """Where the value starting at ``pos`` ends and its ``</parameter>`` ends; None if it has
    no such end (see the module)."""
    depth = 0
    for m in _IN_VALUE.finditer(body, pos):
        if m.group() != _PARAMETER_CLOSE:
            depth += 1
        elif depth:
            depth -= 1
        elif _AFTER_VALUE.match(body, m.end()):
            return m.start(), m.end()
    return None


def _plain_value_end(body: str, pos: int) -> tuple[int, int]:
    """:func:`_value_end` for a value never closed: it ends at its first ``</parameter>``, or
    before the next ``<parameter=`` at a line's start or ``</function>``."""
    m = _PLAIN_END.search(body, pos)
    if m is None:
        return len(body), len(body)
    return m.start(), (m.end() if m.group() == _PARAMETER_CLOSE else m.start())


def _value(raw: str) -> str:
    """The text as written, less one newline after the opening and before the closing tag."""
    if raw.startswith("\n"):
        raw = raw[1:]
    return raw[:-1] if raw.endswith("\n") else raw


def function_span(fmt: str | None) -> SpanSyntax:
    """Bare ``<function=NAME>`` elements at the start of a line, without ``<tool_call>``
    around them; their calls carry the format name ``fmt`` (``qwen3-coder`` when None)."""
    return SpanSyntax("<function=", _FUNCTION_OPENER, FunctionEnd,
                      lambda match, text, at: (_read_bare(match, text, at, fmt),),
                      _function_label)


def _function_label(match: re.Match[str]) -> str:
    return match.group()


def _read_bare(match: re.Match[str], text: str, start: int, fmt: str | None) -> Read:
    """The call of a bare element: ``text`` runs from its opening tag to the end of its
    ``</function>``, as :class:`FunctionEnd` found it."""
    name = match.group("name").strip()
    read = _element(text, 0, name, False)
    if isinstance(read, str):
        return Problem(start, _function_label(match), read,
                       name if _TOOL_NAME.fullmatch(name) else None)
    return ToolCall(name, kwargs=read[0], start=start, format=fmt or QWEN3_CODER)


_BETWEEN, _TAG_NAME, _VALUE, _AFTER_CLOSE, _OTHER = range(5)
_VALUE_TOKEN = re.compile(r"</parameter>|\n[ \t]*<parameter=|<parameter=")
_NOT_BLANK = re.compile(r"[^ \t\r\n]")
_TAG_NAME_END = re.compile(r"[<>\n]")


class FunctionEnd:
    """Finds where a bare ``<function=NAME>`` element ends, fed piece by piece: just past the
    ``</function>`` that follows its last value, values ending as the module says (so
    :func:`_element` reads the same values from the element's text). After text that is no
    ``<parameter=…>`` element, the first ``</function>`` ends it (the reading then says what
    was wrong). Each character is looked at once; the scanner hands a span's text over in
    whole lines, so a tag, which never spans lines, is always seen whole."""

    __slots__ = ("_blank", "_depth", "_state")

    def __init__(self) -> None:
        self._state = _BETWEEN
        self._depth = 0
        """How many ``<parameter=`` the current value opened at a line's start and has not
        closed."""
        self._blank = False
        """Whether the current line holds only blanks up to where the scan stands."""

    def scan(self, text: str, pos: int) -> tuple[Literal["end", "more"], int]:
        """``("end", i)`` with ``i`` just past the element's ``</function>``, or
        ``("more", len(text))``."""
        size = len(text)
        while pos < size:
            state = self._state
            if state in (_BETWEEN, _AFTER_CLOSE):
                found = _NOT_BLANK.search(text, pos)
                blanks = size if found is None else found.start()
                if text.find("\n", pos, blanks) != -1:
                    self._blank = True
                pos = blanks
                if found is None:
                    break
                if text.startswith(_PARAMETER_OPEN, pos):
                    self._state, self._blank = _TAG_NAME, False
                    pos += len(_PARAMETER_OPEN)
                elif text.startswith(_FUNCTION_CLOSE_TAG, pos):
                    return "end", pos + len(_FUNCTION_CLOSE_TAG)
                else:  # after a value: its </parameter> was its own text
                    self._state = _OTHER if state == _BETWEEN else _VALUE
            elif state == _TAG_NAME:
                found = _TAG_NAME_END.search(text, pos)
                if found is None:
                    break
                pos = found.start()
                if text[pos] == ">":
                    self._state, self._depth = _VALUE, 0
                    pos += 1
                else:
                    self._state = _OTHER
            elif state == _VALUE:
                pos = self._scan_value(text, pos)
            else:
                close = text.find(_FUNCTION_CLOSE_TAG, pos)
                if close == -1:
                    break
                return "end", close + len(_FUNCTION_CLOSE_TAG)
        return "more", size

    def _scan_value(self, text: str, pos: int) -> int:
        m = _VALUE_TOKEN.search(text, pos)
        if m is None:
            newline = text.rfind("\n", pos)
            rest = text[pos:] if newline == -1 else text[newline + 1 :]
            self._blank = (self._blank or newline != -1) and not rest.strip(" \t")
            return len(text)
        token = m.group()
        if token == _PARAMETER_CLOSE:
            if self._depth:
                self._depth -= 1
            else:
                self._state = _AFTER_CLOSE
        elif token != _PARAMETER_OPEN or (self._blank and not text[pos : m.start()].strip(" \t")):
            self._depth += 1  # an opening tag at a line's start
        self._blank = False
        return m.end()
