"""MCP tools as ToolSpecs, and MCP results as the messages a model reads.

A server's tool ``get_time`` on server ``time`` becomes the tool ``time.get_time``
(``time__get_time`` on a provider's wire). Its parameters come from the ``inputSchema``
(typed for conversion, and the whole schema checked with jsonschema); its description from
the server; ``readOnlyHint`` becomes ``hint:read-only``. Results keep their structure: text
as text, ``structuredContent`` as JSON, images and other binary content saved into the
workspace with the path reported, ``isError`` as an error.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import json
import mimetypes
import os
import re
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ...message import Message, Status, system
from .._parameters import Parameter, ParamType
from ..spec import Hint, ToolInvocation, ToolSpec, server_hint
from ..tool_context import ToolContext
from ..workspace import open_real_folder
from ._declaration import McpServerConfig

FILES_DIR = "mcp-files"
"""Where binary results are saved, inside the workspace."""
_UNSAFE = re.compile(r"[^A-Za-z0-9_.-]")
_SIMPLE_TYPES = {"string", "integer", "number", "boolean", "array", "object"}

CallServer = Callable[[ToolInvocation, str], Any]
"""Runs a call on the session's connection to the server: (invocation, server's tool name)
to ``CallToolResult``."""


def tool_name(server: str, tool: str) -> str:
    """fencecall's name for a server's tool: characters tool names may not hold become ``_``."""
    return f"{server}.{_UNSAFE.sub('_', tool)}"


def spec_for(config: McpServerConfig, tool: Any, call_server: CallServer) -> ToolSpec:
    """The ToolSpec for one ``mcp.types.Tool`` of ``config``'s server."""
    schema: dict[str, Any] = dict(tool.input_schema or {"type": "object"})
    schema.setdefault("type", "object")
    properties = schema.get("properties") or {}
    required = set(schema.get("required") or ())
    parameters = tuple(
        Parameter(name, _param_type(prop), str(prop.get("description", "")),
                  required=name in required, enum=_enum(prop), schema=prop)
        for name, prop in properties.items() if isinstance(prop, Mapping))
    one_text = (len(parameters) == 1 and parameters[0].type == "string"
                and parameters[0].required)
    annotations = tool.annotations
    read_only = bool(annotations and annotations.read_only_hint)
    destructive = not read_only and (annotations is None
                                     or annotations.destructive_hint is not False)
    hints = {Hint.MCP, server_hint(config.name)}
    if read_only:
        hints.add(Hint.READ_ONLY)
    if destructive:
        hints.add(Hint.DESTRUCTIVE)
    name = tool_name(config.name, tool.name)
    server_tool = tool.name

    def execute(invocation: ToolInvocation) -> Iterator[Message]:
        result = call_server(invocation, server_tool)
        return result_messages(result, invocation.context, name)

    desc = (tool.description or tool.title or f"The {tool.name} tool of MCP server "
            f"{config.name}").strip()
    return ToolSpec(
        name=name,
        desc=desc.split("\n\n", 1)[0],
        instructions=_instructions(desc, parameters, one_text, name),
        instructions_format={"markdown": _instructions(desc, parameters, one_text, name,
                                                       markdown=True)},
        execute=execute,
        parameters=parameters,
        content_param=parameters[0].name if one_text else None,
        json_content=True,
        schema=schema,
        hints=frozenset(hints),
        confirm=_confirm_rule(config, read_only),
        load_priority=10,
    )


def _param_type(prop: Mapping[str, Any]) -> ParamType:
    kind = prop.get("type")
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if len(kinds) == 1 else None
    if kind in _SIMPLE_TYPES:
        simple: ParamType = kind
        return simple
    return "any"


def _enum(prop: Mapping[str, Any]) -> tuple[Any, ...] | None:
    values = prop.get("enum")
    return tuple(values) if isinstance(values, list) and values else None


def _confirm_rule(config: McpServerConfig, read_only: bool) -> bool:
    if config.confirm == "always":
        return True
    if config.confirm == "never":
        return False
    return not read_only


def _instructions(desc: str, parameters: tuple[Parameter, ...], one_text: bool, name: str,
                  *, markdown: bool = False) -> str:
    """The server's full description, each parameter, and how a code block carries them."""
    parts = [desc] if "\n\n" in desc else []
    if parameters:
        lines = [f"- {p.name} ({p.type}{'' if p.required else ', optional'})"
                 + (f": {p.description}" if p.description else "")
                 + (f" One of: {', '.join(map(json.dumps, p.enum))}." if p.enum else "")
                 for p in parameters]
        parts.append("Parameters:\n" + "\n".join(lines))
    if markdown:
        if one_text:
            parts.append(f"Write the {parameters[0].name} as the body of a ```{name} block.")
        elif parameters:
            parts.append(f"Write the arguments as one JSON object in the body of a ```{name} "
                         "block.")
        else:
            parts.append(f"Call it with an empty ```{name} block.")
    return "\n\n".join(parts)


# -- results ---------------------------------------------------------------------------------


def result_messages(result: Any, context: ToolContext, tool: str) -> Iterator[Message]:
    """The messages a ``CallToolResult`` becomes: one, with every part in order."""
    parts: list[str] = []
    texts: list[str] = []
    for block in result.content or ():
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
            parts.append(block.text)
        elif kind in ("image", "audio"):
            parts.append(_saved(context, tool, block.data, block.mime_type, kind))
        elif kind == "resource":
            parts.append(_resource(context, tool, block.resource))
        elif kind == "resource_link":
            parts.append(f"[resource link: {block.uri}"
                         + (f" ({block.name})" if getattr(block, "name", None) else "") + "]")
        else:
            parts.append(f"[{kind or type(block).__name__} content, not shown]")
    structured = result.structured_content
    if structured is not None and not _represented(structured, texts):
        parts.append("Structured result:\n" + json.dumps(structured, ensure_ascii=False,
                                                        indent=2))
    content = "\n".join(parts) if parts else "(the tool returned nothing)"
    if result.is_error:
        yield system(f"{tool} reported an error:\n{content}", Status.ERROR)
    else:
        yield system(content)


def _represented(structured: Any, texts: list[str]) -> bool:
    """Whether the text content already says what ``structured`` holds (servers commonly
    send both; SDK servers wrap a plain value as ``{"result": value}``)."""
    values = [structured]
    if isinstance(structured, Mapping) and set(structured) == {"result"}:
        values.append(structured["result"])
    for text in texts:
        try:
            decoded: Any = json.loads(text)
        except ValueError:
            decoded = text
        if any(decoded == value or text == value for value in values):
            return True
    return False


def _resource(context: ToolContext, tool: str, resource: Any) -> str:
    uri = str(resource.uri)
    text = getattr(resource, "text", None)
    if text is not None:
        return f"[resource {uri}]\n{text}"
    return _saved(context, tool, resource.blob, resource.mime_type, f"resource {uri}")


def _saved(context: ToolContext, tool: str, data: str, mime: str | None, what: str) -> str:
    """Save base64 ``data`` under the workspace's mcp-files folder; the line that says where."""
    try:
        raw = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return f"[{what} ({mime or 'unknown type'}): not valid base64, not saved]"
    try:
        path = _write_new(context.workspace, _file_stem(tool), _extension(mime), raw)
    except OSError as err:
        return f"[{what} ({mime or 'unknown type'}, {len(raw)} bytes): not saved: {err}]"
    shown = path.relative_to(context.workspace)
    return f"[{what} ({mime or 'unknown type'}, {len(raw)} bytes) saved to {shown}]"


def _file_stem(tool: str) -> str:
    return f"{_UNSAFE.sub('_', tool)}-{time.strftime('%Y%m%d-%H%M%S')}"


def _extension(mime: str | None) -> str:
    guessed = mimetypes.guess_extension(mime or "", strict=False) if mime else None
    return guessed or ".bin"


def _write_new(workspace: Path, stem: str, suffix: str, data: bytes) -> Path:
    """Write ``data`` to a new file in ``workspace/mcp-files`` without following any link a
    tool may have left there: the workspace, the folder and the file are opened by descriptor
    with O_NOFOLLOW, the file created with O_EXCL."""
    root = open_real_folder(workspace)
    try:
        with contextlib.suppress(FileExistsError):
            os.mkdir(FILES_DIR, 0o755, dir_fd=root)
        folder = os.open(FILES_DIR, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW, dir_fd=root)
    finally:
        os.close(root)
    try:
        for attempt in range(1000):
            name = f"{stem}{'' if attempt == 0 else f'-{attempt}'}{suffix}"
            try:
                fd = os.open(name, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644,
                             dir_fd=folder)
            except FileExistsError:
                continue
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            return workspace / FILES_DIR / name
        raise FileExistsError(f"{FILES_DIR}/{stem}: too many files of that name")
    finally:
        os.close(folder)
