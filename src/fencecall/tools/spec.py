"""ToolSpec: everything fencecall knows about one tool, declared in one immutable value.

Beside it live :class:`ToolInvocation` (a call of the tool being run, what its ``execute``
receives) and :func:`render_call` (a call of the tool written in any format).
"""

from __future__ import annotations

import inspect
import json
import re
import time
import types
import typing
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, Union

from ..message import Message
from ..parsing import FormatLike, ToolCall, get_format
from ..parsing.xmlcalls import NAME
from ._hooks import Hook
from ._parameters import ArgumentError, Parameter, ParamType, check_schema, validate
from .tool_context import Answer, ConfirmRequest, ToolContext


class Hint(StrEnum):
    """What fencecall itself reads in a tool's :attr:`ToolSpec.hints` (a tool may add tags of
    its own, which ``--tools hint:TAG`` selects too)."""

    READ_ONLY = "read-only"
    """It changes nothing: it runs without asking, and an MCP client is told so."""
    EXEC = "exec"
    """It runs code or commands (an MCP client is told it reaches an open world)."""
    FILES = "files"
    """It reads or writes files in the workspace."""
    DESTRUCTIVE = "destructive"
    """An MCP server's tool that may destroy what it changes."""
    MCP = "mcp"
    """A tool of an MCP server (the server's own tag is :func:`server_hint`)."""


def server_hint(server: str) -> str:
    """The tag of the tools of MCP server ``server`` (``--tools hint:mcp:NAME``)."""
    return f"{Hint.MCP}:{server}"


ExecuteResult = Message | str | Iterable[Message | str] | None
Execute = Callable[["ToolInvocation"], ExecuteResult]
_NAME_RE = re.compile(NAME)


@dataclass(frozen=True, slots=True)
class Example:
    """One turn of an example conversation, written once and rendered in every format.

    A ``call`` turn holds named arguments; rendering maps them onto a code block, an XML
    element or an ``@name(id): {json}`` call as the tool's parameters allow.
    """

    kind: Literal["user", "assistant", "call", "result"]
    text: str = ""
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    tool: str | None = None

    @classmethod
    def user(cls, text: str) -> Example:
        return cls("user", text)

    @classmethod
    def assistant(cls, text: str) -> Example:
        return cls("assistant", text)

    @classmethod
    def call(cls, tool: str | None = None, /, **kwargs: Any) -> Example:
        """A call of ``tool`` (the tool whose spec holds the example, by default)."""
        return cls("call", kwargs=kwargs, tool=tool)

    @classmethod
    def result(cls, text: str) -> Example:
        return cls("result", text)


@dataclass(frozen=True, slots=True)
class Command:
    """A slash command a tool brings along (``/name args``)."""

    name: str
    run: Callable[[ToolContext, str], str | None]
    help: str = ""


@dataclass(frozen=True)
class ToolSpec:
    """A tool: how it is called, how it runs, and how it is described to a model.

    ``content_param`` names the parameter a code block's body fills (``command`` for shell);
    ``argline_param`` the one that takes the whole rest of the langtag (``path`` for save).
    Other words on the langtag fill the remaining parameters in order. ``confirm`` says
    whether a call must be confirmed first (a callable decides per call); ``preview`` shows
    what will happen (a diff, say) when confirmation is asked.
    """

    name: str
    desc: str = ""
    execute: Execute | None = None
    instructions: str = ""
    instructions_format: Mapping[str, str] = field(default_factory=dict)
    """Instructions for one format (by name) that replace ``instructions`` there."""
    examples: tuple[Example, ...] = ()
    block_types: tuple[str, ...] = ()
    available: bool | Callable[[], bool] = True
    parameters: tuple[Parameter, ...] = ()
    content_param: str | None = None
    argline_param: str | None = None
    load_priority: int = 0
    disabled_by_default: bool = False
    hints: frozenset[str] = frozenset()
    hooks: tuple[Hook[Any], ...] = ()
    commands: tuple[Command, ...] = ()
    requires: tuple[str, ...] = ()
    ends_run: bool = False
    """A call that succeeds ends the run done, its result the answer (the complete tool):
    the pipeline marks that result so (:class:`~fencecall.message.Completion`)."""
    """Tools loaded along with this one wherever it is (the shell's jobs tool)."""
    init: Callable[[], ToolSpec] | None = None
    confirm: bool | Callable[[ToolInvocation], bool] = False
    preview: Callable[[ToolInvocation], str | None] | None = None
    paths: Callable[[ToolInvocation], list[str]] | None = None
    """The paths a call names, as given (file tools): permission rules judge it by them."""
    functions: Mapping[str, Callable[..., Any]] = field(default_factory=dict)
    """Functions this tool makes callable from code run by the python tool."""
    schema: Mapping[str, Any] | None = None
    """The arguments' complete JSON schema where the tool's source gives one (an MCP server's
    ``inputSchema``): providers are sent it as is, and bound arguments are checked against it."""
    json_content: bool = False
    """A code block's body is a JSON object holding all the arguments (tools with structured
    parameters, such as MCP tools). With a ``content_param`` too, a body that is not such an
    object is that parameter's text."""

    def __post_init__(self) -> None:
        if not _NAME_RE.fullmatch(self.name):
            raise ValueError(f"invalid tool name {self.name!r}: use letters, digits, _ . -")
        names = [p.name for p in self.parameters]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: duplicate parameter names in {names}")
        for role in ("content_param", "argline_param"):
            value = getattr(self, role)
            if value is not None and value not in names:
                raise ValueError(f"{self.name}: {role} {value!r} is not a parameter")
        if not self.block_types:
            object.__setattr__(self, "block_types", (self.name,))

    # -- identity ------------------------------------------------------------------------

    @property
    def is_runnable(self) -> bool:
        """Informational tools (no ``execute``) are described to the model but never run."""
        return self.execute is not None

    def is_available(self) -> bool:
        """Whether the tool can work here (a missing binary or service hides it)."""
        if callable(self.available):
            try:
                return bool(self.available())
            except Exception:
                return False
        return self.available

    def sort_key(self) -> tuple[int, str]:
        return (self.load_priority, self.name)

    # -- arguments -----------------------------------------------------------------------

    def bind(self, argline: str, content: str, kwargs: Mapping[str, Any]) -> dict[str, Any]:
        """Turn a call as written into validated, typed named arguments."""
        given = dict(kwargs)
        if self.json_content:
            given = self._json_arguments(content, given)
            content = ""
        if not self.parameters and self.schema is None:
            if given:
                raise ArgumentError(f"{self.name}: takes no named arguments")
            if content.strip():
                raise ArgumentError(f"{self.name}: takes no block content")
            return {}
        if self.content_param is not None:
            if self.content_param in given:
                if content:
                    raise ArgumentError(f"{self.name}: {self.content_param!r} given twice "
                                        "(as an argument and as the block's content)")
            elif content or not given:
                given[self.content_param] = content
        elif content.strip():
            raise ArgumentError(f"{self.name}: takes no block content, only arguments")
        if argline:
            if self.argline_param is not None:
                if self.argline_param in given:
                    raise ArgumentError(f"{self.name}: {self.argline_param!r} given twice")
                given[self.argline_param] = argline
            else:
                self._bind_positional(argline.split(), given)
        bound = validate(self.name, self.parameters, given, allow_unknown=self.schema is not None)
        if self.schema is not None:
            check_schema(self.name, self.schema, bound)
        return bound

    def _json_arguments(self, content: str, given: dict[str, Any]) -> dict[str, Any]:
        if not content.strip():
            return given
        try:
            value = json.loads(content)
        except ValueError as err:
            value = err
        if self.content_param is not None:
            names = {p.name for p in self.parameters}
            if not (isinstance(value, dict) and value and set(value) <= names):
                return {**given, self.content_param: content}
        if given:
            raise ArgumentError(f"{self.name}: give the arguments either as named arguments or "
                                "as the JSON object in the body, not both")
        if isinstance(value, ValueError):
            raise ArgumentError(f"{self.name}: the block's body must be a JSON object of "
                                f"arguments ({value})") from None
        if not isinstance(value, dict):
            raise ArgumentError(f"{self.name}: the block's body must be a JSON object of "
                                f"arguments, not {type(value).__name__}")
        return value

    def _positional(self) -> list[Parameter]:
        return [p for p in self.parameters if p.name != self.content_param]

    def _bind_positional(self, words: list[str], given: dict[str, Any]) -> None:
        free = [p for p in self._positional() if p.name not in given]
        if len(words) > len(free):
            names = ", ".join(p.name for p in free) or "none"
            raise ArgumentError(f"{self.name}: too many arguments {words!r}; positional "
                                f"parameters left: {names}")
        for param, word in zip(free, words, strict=False):
            given[param.name] = word

    def unbind(self, kwargs: Mapping[str, Any]) -> tuple[str, str, dict[str, Any]]:
        """Split named arguments into (argline, content, the rest) for block-style formats."""
        rest = dict(kwargs)
        if self.json_content:
            text = rest.get(self.content_param or "")
            if set(rest) == {self.content_param} and isinstance(text, str):
                return "", text, {}
            return "", json.dumps(rest, ensure_ascii=False) if rest else "", {}
        content = ""
        if self.content_param is not None and isinstance(rest.get(self.content_param), str):
            content = rest.pop(self.content_param)
        if self.argline_param is not None:
            value = rest.get(self.argline_param)
            argline = rest.pop(self.argline_param) if isinstance(value, str) else ""
            return argline, content, rest
        words = []
        for param in self._positional():
            if param.name not in rest:
                break
            word = _as_word(rest[param.name])
            if word is None:
                break
            words.append(word)
            del rest[param.name]
        return " ".join(words), content, rest

    # -- schemas -------------------------------------------------------------------------

    def json_schema(self) -> dict[str, Any]:
        if self.schema is not None:
            return dict(self.schema)
        return {
            "type": "object",
            "properties": {p.name: p.json_schema() for p in self.parameters},
            "required": [p.name for p in self.parameters if p.required],
            "additionalProperties": False,
        }

    def function_schema(self, fmt: FormatLike) -> dict[str, Any]:
        """The vendor-neutral function description that providers turn into their wire
        schema: ``name`` (provider-safe), ``description`` (the short description, or this
        format's own instructions) and ``parameters`` (a JSON schema)."""
        description = self.instructions_format.get(get_format(fmt).name) or self.desc
        return {"name": api_name(self.name), "description": description,
                "parameters": self.json_schema()}

    # -- construction --------------------------------------------------------------------

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *, name: str | None = None,
                      content_param: str | None = None, **options: Any) -> ToolSpec:
        """A tool from a typed, documented function: its signature becomes the parameters.

        Descriptions come from the docstring: its first paragraph, and an ``Args:`` section
        with ``name: description`` lines. ``options`` are passed on to :class:`ToolSpec`.
        """
        summary, arg_docs = _parse_docstring(inspect.getdoc(fn) or "")
        hints = typing.get_type_hints(fn)
        parameters = []
        for param in inspect.signature(fn).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                raise ValueError(f"{fn.__name__}: *args/**kwargs cannot become tool parameters")
            if param.name not in hints:
                raise ValueError(f"{fn.__name__}: parameter {param.name!r} needs a type hint")
            kind, enum, optional = _json_type(hints[param.name])
            has_default = param.default is not inspect.Parameter.empty
            parameters.append(Parameter(
                param.name, kind, arg_docs.get(param.name, ""),
                required=not (has_default or optional), enum=enum,
                default=param.default if has_default else None))

        def execute(invocation: ToolInvocation) -> ExecuteResult:
            return _result_messages(fn(**invocation.kwargs))

        return cls(name=name or fn.__name__, desc=options.pop("desc", summary), execute=execute,
                   parameters=tuple(parameters), content_param=content_param, **options)


@dataclass(frozen=True, slots=True)
class ToolInvocation:
    """A call being run: the call as written, its tool, its typed arguments and the context."""

    call: ToolCall
    spec: ToolSpec
    kwargs: Mapping[str, Any]
    context: ToolContext
    asked: list[float] = field(default_factory=list, compare=False, repr=False)
    """The seconds each confirmation waited for its answer: a person's time at the prompt is
    not the tool's, and is left out of the call's duration."""

    def confirm(self, question: str, preview: str | None = None) -> Answer:
        """Ask the user (tools call this for confirmations of their own); falsy: do not."""
        started = time.monotonic()
        try:
            return self.context.confirm(ConfirmRequest(self.spec.name, self.call, question,
                                                       self.kwargs, preview))
        finally:
            self.asked.append(time.monotonic() - started)


def render_call(spec: ToolSpec, kwargs: Mapping[str, Any], fmt: FormatLike,
                call_id: str | None = None) -> str:
    """A call of ``spec`` with named arguments ``kwargs``, written in ``fmt``."""
    target = get_format(fmt)
    if target.named_arguments:
        return target.render(ToolCall(spec.name, kwargs=kwargs, call_id=call_id,
                                      format=target.name))
    argline, content, rest = spec.unbind(kwargs)
    name = spec.block_types[0] if target.by_langtag else spec.name
    return target.render(ToolCall(name, argline, content, rest, call_id, format=target.name))


def api_name(name: str) -> str:
    """Provider APIs allow ``[a-zA-Z0-9_-]`` only, so ``mcp.fetch`` travels as ``mcp__fetch``."""
    return name.replace(".", "__")


def _as_word(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    if isinstance(value, str) and value and not any(c.isspace() or c == "`" for c in value):
        return value
    return None


def _result_messages(value: Any) -> ExecuteResult:
    if value is None or isinstance(value, Message | str):
        return value
    if isinstance(value, Iterator):
        return (item if isinstance(item, Message | str) else _to_text(item) for item in value)
    return _to_text(value)


def _to_text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, default=str, indent=2)


_SIMPLE: dict[Any, ParamType] = {str: "string", int: "integer", float: "number",
                                 bool: "boolean", list: "array", tuple: "array",
                                 dict: "object"}


def _json_type(hint: Any) -> tuple[ParamType, tuple[Any, ...] | None, bool]:
    """(JSON type, enum values, optional?) for a type hint."""
    origin = typing.get_origin(hint)
    if origin in (Union, types.UnionType):
        members = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(members) == 1:
            kind, enum, _ = _json_type(members[0])
            return kind, enum, True
        raise ValueError(f"unsupported union type {hint!r}")
    if origin is Literal:
        values = typing.get_args(hint)
        kind, _, _ = _json_type(type(values[0]))
        return kind, tuple(values), False
    base = origin or hint
    if base in _SIMPLE:
        return _SIMPLE[base], None, False
    raise ValueError(f"unsupported parameter type {hint!r}")


_ARG_LINE = re.compile(r"^\s{2,}(\w+)(?:\s*\([^)]*\))?:\s*(.*)$")


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    summary = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    args: dict[str, str] = {}
    in_args = False
    current = None
    for line in doc.splitlines():
        if line.strip() in ("Args:", "Arguments:", "Parameters:"):
            in_args = True
            continue
        if in_args:
            if line and not line[0].isspace():
                break
            m = _ARG_LINE.match(line)
            if m:
                current = m.group(1)
                args[current] = m.group(2).strip()
            elif current and line.strip():
                args[current] += " " + line.strip()
    return summary, args
