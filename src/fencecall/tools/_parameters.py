"""Parameters and the conversion of written arguments into the types a tool declares.

Models write every argument as text in markdown and XML, and as JSON in the tool format; a
tool should receive ``timeout=5`` (an int) either way, and a model that writes ``timeout=abc``
should be told exactly what was wrong.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..errors import ToolError

ParamType = Literal["string", "integer", "number", "boolean", "array", "object", "any"]
"""``any`` is for parameters whose JSON schema allows more than one type (an MCP tool's, say):
text that reads as JSON is taken as JSON, other text as a string."""
_TRUE = frozenset({"true", "yes", "y", "1", "on"})
_FALSE = frozenset({"false", "no", "n", "0", "off"})


class ArgumentError(ToolError, ValueError):
    """Arguments that do not fit a tool's parameters; the message is written for the model."""


@dataclass(frozen=True, slots=True)
class Parameter:
    """One named argument of a tool."""

    name: str
    type: ParamType = "string"
    description: str = ""
    required: bool = True
    enum: tuple[Any, ...] | None = None
    default: Any = None
    schema: Mapping[str, Any] | None = None
    """The parameter's JSON schema as its source wrote it (an MCP server's), reported as is."""

    def json_schema(self) -> dict[str, Any]:
        if self.schema is not None:
            return dict(self.schema)
        schema: dict[str, Any] = {"type": self.type}
        if self.description:
            schema["description"] = self.description
        if self.enum is not None:
            schema["enum"] = list(self.enum)
        if self.type == "array":
            schema["items"] = {}
        return schema

    def convert(self, value: Any, tool: str) -> Any:
        """``value`` as this parameter's type, or :class:`ArgumentError`."""
        converted = _convert(self.type, value)
        if converted is _INVALID:
            shown = value if len(repr(value)) < 80 else repr(value)[:77] + "..."
            raise ArgumentError(f"{tool}: argument {self.name!r} must be {_ARTICLE[self.type]}, "
                                f"got {shown!r}")
        if self.enum is not None and converted not in self.enum:
            raise ArgumentError(f"{tool}: argument {self.name!r} must be one of "
                                f"{', '.join(map(repr, self.enum))}; got {converted!r}")
        return converted


_ARTICLE = {"string": "a string", "integer": "an integer", "number": "a number",
            "boolean": "a boolean (true/false)", "array": "a JSON array",
            "object": "a JSON object", "any": "a JSON value"}
_INVALID = object()


def _convert(kind: ParamType, value: Any) -> Any:
    if kind == "any":
        if isinstance(value, str):
            try:
                return json.loads(value)
            except ValueError:
                return value
        return value
    if kind == "string":
        return value if isinstance(value, str) else _INVALID
    if isinstance(value, str):
        text = value.strip()
        if kind == "boolean":
            lowered = text.lower()
            return True if lowered in _TRUE else False if lowered in _FALSE else _INVALID
        try:
            value = json.loads(text) if kind in ("array", "object") else (
                int(text) if kind == "integer" else float(text))
        except ValueError:
            return _INVALID
    if kind == "boolean":
        return value if isinstance(value, bool) else _INVALID
    if isinstance(value, bool):
        return _INVALID
    if kind == "integer":
        if isinstance(value, float) and value.is_integer():
            return int(value)
        return value if isinstance(value, int) else _INVALID
    if kind == "number":
        return value if isinstance(value, int | float) else _INVALID
    if kind == "array":
        return list(value) if isinstance(value, list | tuple) else _INVALID
    return value if isinstance(value, dict) else _INVALID


def validate(tool: str, parameters: Sequence[Parameter], given: Mapping[str, Any], *,
             allow_unknown: bool = False) -> dict[str, Any]:
    """Check ``given`` against ``parameters``; return the converted arguments with defaults.

    ``allow_unknown`` passes other arguments through unchanged, for tools whose own schema
    decides about them."""
    known = {p.name: p for p in parameters}
    unknown = sorted(set(given) - set(known))
    if unknown and not allow_unknown:
        allowed = ", ".join(known) or "none"
        raise ArgumentError(f"{tool}: unknown argument(s) {', '.join(map(repr, unknown))}; "
                            f"allowed: {allowed}")
    result: dict[str, Any] = {name: given[name] for name in unknown}
    missing = []
    for param in parameters:
        if param.name in given:
            result[param.name] = param.convert(given[param.name], tool)
        elif param.required:
            missing.append(param.name)
        elif param.default is not None:
            result[param.name] = param.default
    if missing:
        raise ArgumentError(f"{tool}: missing required argument(s): {', '.join(missing)}")
    return result


def check_schema(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Check ``arguments`` against a JSON schema a tool's source gave; the model is told each
    problem (at most three) with its place. A schema that is itself invalid is left to the
    tool's source to apply."""
    import jsonschema  # a dependency of the MCP SDK; only tools that bring a schema need it

    try:
        validator = jsonschema.validators.validator_for(schema)(schema)
        errors = sorted(validator.iter_errors(dict(arguments)), key=lambda e: list(e.path))
    except jsonschema.SchemaError:
        return
    if errors:
        problems = "; ".join(
            f"{'/'.join(map(str, error.path)) or 'arguments'}: {error.message}"
            for error in errors[:3])
        raise ArgumentError(f"{tool}: invalid arguments: {problems}")
