"""An MCP server as the user declares it: a command to start (stdio) or a URL (Streamable HTTP).

Declarations come from the config file's ``[mcp.servers.NAME]`` tables and from
``--mcp NAME=COMMAND`` on the command line. ``${VAR}`` in ``env`` and ``headers`` values is
expanded from the environment when the declaration is read, so a token never sits in a file;
such variables count as secrets (tools never see them, results are redacted).
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ...errors import unknown_settings

ConfirmPolicy = Literal["hints", "always", "never"]
CONFIRM_POLICIES: tuple[ConfirmPolicy, ...] = ("hints", "always", "never")
SERVER_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_-]*")
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


class DeclarationError(ValueError):
    """A server declaration is invalid; the message names the key."""


@dataclass(frozen=True)
class McpServerConfig:
    """One MCP server: ``command`` + ``args`` (stdio) or ``url`` (Streamable HTTP).

    ``confirm`` says which calls ask the user first: ``hints`` (the default) asks for every
    tool the server does not mark read-only, ``always`` for all, ``never`` for none. A server
    starts on first use unless ``eager``. ``start_timeout`` bounds its start and handshake,
    ``call_timeout`` each call. A stdio server starts in ``cwd``, trusted as given (naming
    the workspace trusts what the model writes there), else in a private empty folder.
    """

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    eager: bool = False
    start_timeout: float = 30.0
    call_timeout: float = 120.0
    confirm: ConfirmPolicy = "hints"
    secret_names: frozenset[str] = frozenset()
    """The environment variables its ``${VAR}`` references named."""

    def __post_init__(self) -> None:
        if not SERVER_NAME.fullmatch(self.name):
            raise DeclarationError(f"MCP server name {self.name!r}: use letters, digits, _ and -,"
                                   " starting with a letter")
        if (self.command is None) == (self.url is None):
            raise DeclarationError(f"MCP server {self.name!r}: give either command or url")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise DeclarationError(f"MCP server {self.name!r}: url must start with http:// "
                                   f"or https://, got {self.url!r}")
        if self.confirm not in CONFIRM_POLICIES:
            raise DeclarationError(f"MCP server {self.name!r}: confirm must be one of "
                                   f"{', '.join(CONFIRM_POLICIES)}")
        for key in ("start_timeout", "call_timeout"):
            if not getattr(self, key) > 0:
                raise DeclarationError(f"MCP server {self.name!r}: {key} must be above 0")

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"

    def describe(self) -> str:
        """How it is reached, for listings (header values are never shown)."""
        if self.url is not None:
            return self.url
        return shlex.join([self.command or "", *self.args])

    def digest(self) -> str:
        """A fingerprint of what starts the server, naming its cached tool listing."""
        identity = {"command": self.command, "args": self.args, "url": self.url,
                    "cwd": self.cwd, "env": sorted(self.env)}
        return hashlib.sha256(json.dumps(identity).encode()).hexdigest()[:16]


def expand(value: str, environ: Mapping[str, str], where: str) -> tuple[str, set[str]]:
    """``value`` with each ``${VAR}`` replaced from ``environ``, and the names it used."""
    used: set[str] = set()

    def substitute(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in environ:
            raise DeclarationError(f"{where}: ${{{name}}} is not set in the environment")
        used.add(name)
        return environ[name]

    return _VARIABLE.sub(substitute, value), used


def from_table(name: str, table: Mapping[str, Any], environ: Mapping[str, str]) -> McpServerConfig:
    """A declaration from a ``[mcp.servers.NAME]`` table."""
    where = f"mcp.servers.{name}"
    known = {"command", "args", "env", "cwd", "url", "headers", "eager", "start_timeout",
             "call_timeout", "confirm"}
    problem = unknown_settings(table, known, where)
    if problem is not None:
        raise DeclarationError(problem)
    secret_names: set[str] = set()
    mappings: dict[str, dict[str, str]] = {}
    for key in ("env", "headers"):
        value = table.get(key, {})
        if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise DeclarationError(f"{where}.{key} must be a table of strings")
        expanded: dict[str, str] = {}
        for item, text in value.items():
            expanded[item], used = expand(text, environ, f"{where}.{key}.{item}")
            secret_names |= used
        mappings[key] = expanded
    args = table.get("args", [])
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise DeclarationError(f"{where}.args must be a list of strings")
    for key, kind in (("command", str), ("url", str), ("cwd", str), ("confirm", str),
                      ("eager", bool)):
        if key in table and not isinstance(table[key], kind):
            raise DeclarationError(f"{where}.{key} must be a {kind.__name__}")
    timeouts: dict[str, float] = {}
    for key in ("start_timeout", "call_timeout"):
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise DeclarationError(f"{where}.{key} must be a number of seconds")
            timeouts[key] = float(value)
    try:
        return McpServerConfig(
            name, command=table.get("command"), args=tuple(args), env=mappings["env"],
            cwd=table.get("cwd"), url=table.get("url"), headers=mappings["headers"],
            eager=table.get("eager", False), confirm=table.get("confirm", "hints"),
            secret_names=frozenset(secret_names), **timeouts)
    except DeclarationError as err:
        raise DeclarationError(f"{where}: {err}") from None


def from_command_line(text: str) -> McpServerConfig:
    """A declaration from ``--mcp NAME=COMMAND ARGS...`` (split as a shell would) or
    ``--mcp NAME=URL``."""
    name, sep, rest = text.partition("=")
    if not sep or not rest.strip():
        raise DeclarationError(f"--mcp {text!r}: write NAME=COMMAND or NAME=URL")
    if rest.strip().startswith(("http://", "https://")):
        return McpServerConfig(name.strip(), url=rest.strip())
    try:
        words = shlex.split(rest)
    except ValueError as err:
        raise DeclarationError(f"--mcp {text!r}: {err}") from None
    return McpServerConfig(name.strip(), command=words[0], args=tuple(words[1:]))
