"""The pythonic format: ``[get_weather(city="Paris"), shell(command="ls")]``.

What Llama 3.2 and Llama 4 are trained to write: a line that starts with a Python list of
calls with keyword arguments. The list ends where its brackets balance
(:class:`~fencecall.parsing._pyscan.PyEndScanner`, which also ends it at its last bracket when a
quote left unescaped in a string would make Python read on past it) and is read with
:mod:`ast`, never evaluated: values must be literals (strings, numbers, ``True``/``False``/
``None``, their JSON spellings ``true``/``false``/``null``, lists, tuples, dicts with string
keys). Tool names may be dotted (``mcp.fetch(url="…")``), as Python writes attribute calls.
Each call of a list stands on its own, as separate tags do in the other formats: one that
cannot be read (not a call, a positional argument, a value that is not a literal, an argument
set twice, or Python that does not parse) is reported to the model, and the others run. Where
the list as a whole does not parse, it is split at its top-level commas and each element is
read alone.

Llama 4 may wrap the list in its ``<|python_start|>`` and ``<|python_end|>`` tokens, and may
leave out the end token: ``<|python_start|>[get_weather(city="Paris")]<|python_end|>`` at the
start of a line is read as the list alone (vLLM's ``llama4_pythonic`` reading). An end token
on the list's line is part of the call; one that comes before the list closes ends the call
there, as the model said it was done.
"""

from __future__ import annotations

import ast
import keyword
import math
import re
from collections.abc import Mapping
from typing import Literal

from .._pyscan import PyEndScanner, misquoted, split_elements
from .._scanner import Scanner
from .._syntax import Problem, Read, SpanSyntax
from ..model import ToolCall
from .base import BlockCalls, CallScanner, UnrepresentableCall, check_named_only

NAME = "pythonic"
PYTHON_START = "<|python_start|>"
PYTHON_END = "<|python_end|>"
_IDENTIFIER = r"[A-Za-z_]\w*"
# ``[`` at the start of a line, then a (dotted) name and ``(`` on the same line. The name is
# looked ahead at, so the span's text starts right after the bracket.
_LIST = rf"\[(?=[ \t]*(?P<name>{_IDENTIFIER}(?:\.{_IDENTIFIER})*)[ \t]*\()"
_OPENER = re.compile(_LIST)
_TAGGED_OPENER = re.compile(rf"{re.escape(PYTHON_START)}[ \t]*{_LIST}")
_END_ON_THE_LINE = re.compile(rf"[ \t]*{re.escape(PYTHON_END)}")
_DETECTED_AT = re.compile(r" \(detected at line \d+\)")
_QUOTING = ("; a quote inside a string must be escaped (\\' or \\\") or the string written "
            "with the other quote")
_CONSTANTS: Mapping[str, object] = {"True": True, "False": False, "None": None,
                                    "true": True, "false": False, "null": None}
_LITERALS = "strings, numbers, True/False, None, lists or dicts"
_ELEMENT_NAME = re.compile(rf"\s*(?P<name>{_IDENTIFIER}(?:\s*\.\s*{_IDENTIFIER})*)\s*\(")


class _NotLiteral(ValueError):
    """A value that cannot be an argument; ``why`` completes "passes x=… to tool, …"."""

    def __init__(self, node: ast.AST,
                 why: str = f"which is not a literal; values must be {_LITERALS}"):
        super().__init__(_snippet(node))
        self.why = why


def _snippet(node: ast.AST) -> str:
    text = ast.unparse(node)
    return text if len(text) <= 40 else text[:37] + "..."


def _label(match: re.Match[str]) -> str:
    return f"[{match.group('name')}(…)]"


def _literal(node: ast.expr) -> object:
    """The value a literal node writes; :class:`_NotLiteral` for anything else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str | int | float | None):
        return _finite(node.value, node)
    if isinstance(node, ast.Name) and node.id in _CONSTANTS:
        return _CONSTANTS[node.id]
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = node.operand.value if isinstance(node.operand, ast.Constant) else None
        if isinstance(value, int | float) and not isinstance(value, bool):
            return _finite(-value if isinstance(node.op, ast.USub) else value, node)
    if isinstance(node, ast.List | ast.Tuple):
        return [_literal(item) for item in node.elts]
    if isinstance(node, ast.Dict):
        return {_key(key, node): _literal(value) for key, value in zip(node.keys, node.values,
                                                                         strict=True)}
    raise _NotLiteral(node)


def _finite(value: object, node: ast.expr) -> object:
    """``value``, unless it is a float too large to be one (``1e999`` reads as infinity,
    which no JSON carries to a tool)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise _NotLiteral(node, "which is too large to be a number")
    return value


def _key(key: ast.expr | None, node: ast.Dict) -> str:
    if isinstance(key, ast.Constant) and isinstance(key.value, str):
        return key.value
    raise _NotLiteral(node if key is None else key)


def _dotted(func: ast.expr) -> str | None:
    """``mcp.fetch`` for ``mcp.fetch(…)``; None when the callee is not a (dotted) name."""
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        owner = _dotted(func.value)
        return None if owner is None else f"{owner}.{func.attr}"
    return None


def _call(node: ast.expr, start: int) -> ToolCall | str:
    """One element of the list as a call, or what is wrong with it."""
    if not isinstance(node, ast.Call):
        return f"holds {_snippet(node)}, which is not a call; write TOOL(NAME=VALUE, …)"
    name = _dotted(node.func)
    if name is None:
        return f"calls {_snippet(node.func)}, which is not a tool name"
    if node.args:
        return (f"passes a positional argument to {name} ({_snippet(node.args[0])}); write "
                "every argument as NAME=VALUE")
    kwargs: dict[str, object] = {}
    for argument in node.keywords:
        if argument.arg is None:
            return f"unpacks **{_snippet(argument.value)} into {name}; write NAME=VALUE"
        if argument.arg in kwargs:
            return f"sets {argument.arg} twice"
        try:
            kwargs[argument.arg] = _literal(argument.value)
        except _NotLiteral as err:
            return f"passes {argument.arg}={err} to {name}, {err.why}"
    return ToolCall(name, kwargs=kwargs, start=start, format=NAME)


def read_call_list(match: re.Match[str], text: str, start: int) -> list[Read]:
    """The calls a ``[name(…), …]`` span makes, all placed at the list's start, and a problem
    for each element that is not a call that can run."""
    label, name = _label(match), match.group("name")
    try:
        tree = ast.parse("[" + text, mode="eval")
    except SyntaxError:
        return [_read_element(element, start, label) for element in split_elements(text)]
    except (ValueError, RecursionError, MemoryError) as err:
        return [Problem(start, label, f"is not a valid Python list of calls ({err})", name)]
    if not isinstance(tree.body, ast.List):
        return [Problem(start, label, "is not a plain list of calls; write "
                        "[TOOL(NAME=VALUE, …)]", name)]
    return [_read(node, start, label) for node in tree.body.elts]


def _read(node: ast.expr, start: int, label: str) -> Read:
    """One element as a call, or a problem named after the call it meant, if any."""
    call = _call(node, start)
    if not isinstance(call, str):
        return call
    name = _dotted(node.func) if isinstance(node, ast.Call) else None
    return Problem(start, label if name is None else f"{name}(…)", call, name)


def _read_element(source: str, start: int, label: str) -> Read:
    """:func:`_read` for an element's source, read alone."""
    try:
        node = ast.parse(f"({source}\n)", mode="eval").body
    except SyntaxError as err:
        m = _ELEMENT_NAME.match(source)
        name = None if m is None else re.sub(r"\s+", "", m.group("name"))
        hint = _QUOTING if misquoted(source) else ""
        return Problem(start, label if name is None else f"{name}(…)",
                       f"is not valid Python ({_DETECTED_AT.sub('', err.msg)}){hint}", name)
    except (ValueError, RecursionError, MemoryError) as err:
        return Problem(start, label, f"is not valid Python ({err})")
    return _read(node, start, label)


CALL_LISTS = SpanSyntax("[", _OPENER, PyEndScanner, read_call_list, _label)


class _TaggedListEnd:
    """Where a list in Llama 4's tokens ends: past its last bracket and an end token on the
    same line, or at an end token that comes before the list closes. Read a line at a time,
    so a span looks no further than the line it ends on (many tags on many lines stay
    linear)."""

    __slots__ = ("_list",)

    def __init__(self) -> None:
        self._list = PyEndScanner()

    def scan(self, text: str, pos: int) -> tuple[Literal["end", "more"], int]:
        size = len(text)
        while pos < size:
            newline = text.find("\n", pos)
            line_end = size if newline == -1 else newline + 1
            tag = text.find(PYTHON_END, pos, line_end)
            status, at = self._list.scan(text, pos, line_end if tag == -1 else tag)
            if status == "end":
                m = _END_ON_THE_LINE.match(text, at)
                return "end", at if m is None else m.end()
            if tag != -1:
                return "end", tag + len(PYTHON_END)
            pos = line_end
        return "more", size


def _read_tagged(match: re.Match[str], text: str, start: int) -> list[Read]:
    """:func:`read_call_list` for a list in Llama 4's tokens, less its end token."""
    body = text.removesuffix(PYTHON_END)
    return read_call_list(match, body.rstrip(" \t") if body != text else body, start)


TAGGED_CALL_LISTS = SpanSyntax(PYTHON_START, _TAGGED_OPENER, _TaggedListEnd, _read_tagged,
                               _label)
SPANS = (CALL_LISTS, TAGGED_CALL_LISTS)
"""The format's call syntaxes: lists, bare or in Llama 4's tokens."""


def _python(value: object) -> str:
    """``value`` as a Python literal that :func:`_literal` reads back."""
    if value is None or isinstance(value, bool | str | int):
        return repr(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UnrepresentableCall(f"{value!r} cannot be written as a Python literal")
        return repr(value)
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_python(item) for item in value) + "]"
    if isinstance(value, Mapping):
        if not all(isinstance(key, str) for key in value):
            raise UnrepresentableCall("only dicts with string keys can be written")
        return "{" + ", ".join(f"{key!r}: {_python(item)}" for key, item in value.items()) + "}"
    raise UnrepresentableCall(f"a {type(value).__name__} cannot be written as a literal")


def _identifier(word: str, what: str) -> str:
    if not word.isidentifier() or keyword.iskeyword(word) or not word.isascii():
        raise UnrepresentableCall(f"{word!r} cannot be a Python {what}")
    return word


def render_pythonic(call: ToolCall) -> str:
    """``[name(key=value, …)]`` with ``repr``-style literals, on one line."""
    for part in call.name.split("."):
        _identifier(part, "name")
    check_named_only(call, NAME)
    arguments = ", ".join(f"{_identifier(key, 'keyword argument')}={_python(value)}"
                          for key, value in call.kwargs.items())
    return f"[{call.name}({arguments})]"


class PythonicFormat:
    """Lists of Python calls at the start of a line; code blocks are tracked only so that
    calls inside them never run."""

    name = NAME
    native = False
    named_arguments = True
    by_langtag = False
    preamble = (
        "You can use tools by writing, at the start of a line, a Python list of calls with "
        "keyword arguments: [TOOL(NAME=VALUE, …), OTHER_TOOL(…)]. Values must be literals "
        f"({_LITERALS}); nothing is evaluated. Results come back to you as system messages."
    )

    def scanner(self) -> CallScanner:
        return BlockCalls(Scanner(blocks="none", spans=SPANS))

    def render(self, call: ToolCall) -> str:
        return render_pythonic(call)
