"""The MCP servers a run declared: their tools for the toolchain, and a connection per session.

Listing a server's tools needs the server, but starting every server at every run is slow,
so a listing is kept in a cache (keyed by what starts the server) and reused: then a server
starts only when a session first calls one of its tools. Without a cached listing, or with
``eager = true``, the server starts to list its tools, and that connection is handed to the
first session that needs it. Each session has its own connection (its own server process
for stdio), closed with the session; a server that crashed is started again on the next
call.
"""

from __future__ import annotations

import json
import threading
import warnings
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

from ..spec import ToolInvocation, ToolSpec
from ..tool_context import ResourceKey, ToolContext
from ._connection import McpConnection, McpServerError
from ._convert import spec_for
from ._declaration import McpServerConfig


@dataclass
class ServerState:
    """What is known of one declared server, for listings and ``/mcp``."""

    config: McpServerConfig
    tools: tuple[ToolSpec, ...] = ()
    listed_from: str | None = None
    """``server`` (started to list), ``cache`` (an earlier listing), or None (not listed)."""
    error: str | None = None
    sessions: int = 0
    """Connections now open for sessions."""
    restarts: int = 0
    stray_lines: int = 0


class McpServers:
    """The declared servers. ``env`` is the environment of stdio servers' processes (the
    allow-listed one tools get, to which each declaration adds its own ``env``); ``roots``
    are the folders a model can write (the workspace and the others), kept off their PATH
    and never their folder (a session's own roots are added). ``cache_dir`` holds tool
    listings. With ``hand_over``
    (one session, in these roots), the connection that listed a server's tools serves the
    first session that calls one; without it (sessions in other workspaces, as in a batch)
    it is closed, and each session starts its own."""

    def __init__(self, configs: Iterable[McpServerConfig], *, env: Mapping[str, str],
                 roots: Sequence[Path] = (), cache_dir: Path | None = None, hand_over: bool = True):
        self._states: dict[str, ServerState] = {}
        for config in configs:
            if config.name in self._states:
                raise ValueError(f"two MCP servers are called {config.name!r}")
            self._states[config.name] = ServerState(config)
        self._env = dict(env)
        self._roots = tuple(roots)
        self._cache_dir = cache_dir
        self._spares: dict[str, McpConnection] = {}
        self._hand_over = hand_over
        self._lock = threading.Lock()

    @property
    def states(self) -> tuple[ServerState, ...]:
        return tuple(self._states.values())

    def __bool__(self) -> bool:
        return bool(self._states)

    # -- tools -----------------------------------------------------------------------------

    def tools(self, allowlist: Sequence[str] | None) -> list[ToolSpec]:
        """The tools of every server whose tools ``allowlist`` could select (all with None).

        A server that cannot be listed is left out with a warning; a server the allowlist
        leaves out entirely gets a warning naming the glob that would take it in.
        """
        wanted = [state for state in self._states.values() if _wanted(state.config, allowlist)]
        for state in self._states.values():
            if state not in wanted:
                warnings.warn(f"MCP server {state.config.name!r} is configured but "
                              f"the tool allowlist selects none of its tools; add "
                              f"'{state.config.name}.*' to use them", stacklevel=2)
        if len(wanted) > 1:
            with ThreadPoolExecutor(len(wanted)) as pool:
                list(pool.map(self._list, wanted))
        else:
            for state in wanted:
                self._list(state)
        for state in wanted:
            if state.error is not None:
                warnings.warn(f"{state.error}\nIts tools are left out.",
                              stacklevel=2)
        return [spec for state in wanted for spec in state.tools]

    def _list(self, state: ServerState) -> None:
        config = state.config
        if state.listed_from is not None:
            return  # listed already in this run
        cached = None if config.eager else self._read_cache(config)
        if cached is not None:
            self._set_tools(state, cached, "cache")
            return
        connection = McpConnection(config, self._env, self._roots)
        try:
            tools = connection.start()
        except McpServerError as err:
            state.error = str(err)
            return
        self._set_tools(state, tools, "server")
        self._write_cache(config, tools)
        if not self._hand_over:
            connection.close()
            return
        with self._lock:
            replaced = self._spares.pop(config.name, None)
            self._spares[config.name] = connection
        if replaced is not None:
            replaced.close()

    def _set_tools(self, state: ServerState, tools: Sequence[Any], source: str) -> None:
        name = state.config.name
        key: ResourceKey[SessionServer] = ResourceKey(f"mcp:{name}")

        def call_server(invocation: ToolInvocation, tool: str) -> Any:
            handle = invocation.context.resource(
                key, lambda: SessionServer(self, name, invocation.context))
            return handle.call(tool, invocation.kwargs)

        specs: dict[str, ToolSpec] = {}
        for tool in tools:
            spec = spec_for(state.config, tool, call_server)
            specs.setdefault(spec.name, spec)
        state.tools = tuple(specs.values())
        state.listed_from = source
        state.error = None

    # -- connections -------------------------------------------------------------------------

    def connect(self, name: str, context: ToolContext) -> McpConnection:
        """A started connection to server ``name`` for a session: the one made to list its
        tools, if no session has taken it yet, else a new one."""
        state = self._states[name]
        with self._lock:
            spare = self._spares.pop(name, None)
        if spare is not None and spare.alive:
            return spare
        if spare is not None:
            spare.close()
        roots = (*context.roots, *context.sandbox.writable, *self._roots)
        connection = McpConnection(state.config, context.tool_env(), roots)
        tools = connection.start()
        self._write_cache(state.config, tools)
        return connection

    def state(self, name: str) -> ServerState:
        return self._states[name]

    def close(self) -> None:
        """Close the connections no session took."""
        with self._lock:
            spares = list(self._spares.values())
            self._spares.clear()
        for connection in spares:
            connection.close()

    def __enter__(self) -> McpServers:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the listing cache -------------------------------------------------------------------

    def _cache_file(self, config: McpServerConfig) -> Path | None:
        if self._cache_dir is None:
            return None
        return self._cache_dir / f"{config.name}-{config.digest()}.json"

    def _read_cache(self, config: McpServerConfig) -> list[Any] | None:
        path = self._cache_file(config)
        if path is None or not path.is_file():
            return None
        from mcp.types import Tool

        try:
            return [Tool.model_validate(item) for item in json.loads(path.read_text())]
        except (ValueError, TypeError):
            return None  # a torn or outdated cache is listed afresh

    def _write_cache(self, config: McpServerConfig, tools: Sequence[Any]) -> None:
        path = self._cache_file(config)
        if path is None:
            return
        data = [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in tools]
        try:
            path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            scratch = path.with_suffix(".tmp")
            scratch.write_text(json.dumps(data))
            scratch.replace(path)
        except OSError:
            pass  # a cache that cannot be written only costs a start next time


class SessionServer:
    """One session's connection to one server (a session resource, closed with it)."""

    def __init__(self, servers: McpServers, name: str, context: ToolContext):
        self._servers = servers
        self._name = name
        self._context = context
        self._connection: McpConnection | None = None
        self._lock = threading.Lock()
        self._aborted = False

    def call(self, tool: str, arguments: Mapping[str, Any]) -> Any:
        state = self._servers.state(self._name)
        with self._lock:
            connection = self._connection
            if connection is None or not connection.alive:
                if connection is not None:
                    state.stray_lines += connection.stray_lines
                    connection.close()
                    state.restarts += 1
                    state.sessions -= 1
                self._connection = None
                if self._aborted:
                    raise McpServerError(f"MCP server {self._name!r}: the call was stopped")
                connection = self._servers.connect(self._name, self._context)
                self._connection = connection
                state.sessions += 1
                if self._aborted:  # stopped while the server was starting
                    connection.close(wait=False)
        try:
            return connection.call(tool, arguments, state.config.call_timeout)
        except McpServerError as err:
            if not connection.alive and not self._aborted:
                raise McpServerError(f"{err}\nIt will be started again on the next call.") \
                    from None
            raise

    @property
    def stray_lines(self) -> int:
        return self._connection.stray_lines if self._connection is not None else 0

    def abort(self) -> None:
        """End the server's process now, from any thread, without waiting: a call in flight
        fails at once, and so does every later one (a batch task stopped at its time limit).
        The session still closes this as usual."""
        self._aborted = True
        connection = self._connection
        if connection is not None:
            connection.close(wait=False)

    def close(self) -> None:
        with self._lock:
            connection, self._connection = self._connection, None
        if connection is not None:
            state = self._servers.state(self._name)
            state.sessions -= 1
            state.stray_lines += connection.stray_lines
            connection.close()


def _wanted(config: McpServerConfig, allowlist: Sequence[str] | None) -> bool:
    """Whether an allowlist could select a tool of this server (whose tools are all named
    ``SERVER.TOOL``), judged without listing them."""
    if allowlist is None:
        return True
    for entry in allowlist:
        if entry.startswith("hint:"):
            return True
        glob = any(c in entry for c in "*?[")
        if ("." in entry or glob) and fnmatchcase(config.name, entry.split(".", 1)[0]):
            return True
    return False
