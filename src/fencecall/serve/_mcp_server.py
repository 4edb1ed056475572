"""A toolchain served over MCP: every tool with its JSON schema and annotations.

Each MCP client session gets its own :class:`~fencecall.execution.Session` (its own shell,
interpreter and state): over stdio the process serves one client, so one session; over
Streamable HTTP, one per ``Mcp-Session-Id`` (clients on the handshake protocol, up to
2025-11-25), closed when the client ends the session or it times out. The 2026-07-28
protocol has no sessions, so an HTTP client speaking it gets a fresh session for each call.

Calls run through the same pipeline as in chat: hooks, confirmation, sandbox, redaction.
Confirmation is asked of the client's user with MCP elicitation where the client declared
it and the protocol lets a server ask (the handshake era); otherwise the ``fallback``
decides (decline, unless the server was started with ``-y``), so only calls that need no
confirmation (read-only ones) run.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import threading
from collections.abc import Callable, Coroutine
from typing import Any

import anyio
import anyio.from_thread
import anyio.to_thread
import mcp.types as types
from mcp.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from .. import __version__
from ..errors import UserError
from ..execution import Session
from ..execution.confirm_policy import auto_no
from ..message import Message
from ..parsing import ToolCall
from ..tools import ConfirmFunc, ConfirmRequest, Hint, Toolchain, ToolSpec
from ..tools.tool_context import Answer
from ._guards import BearerGuard, HostGuard, canonical_host

SessionFactory = Callable[[ConfirmFunc], Session]
"""Makes a session for one client, given the confirm function that asks that client."""
_CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approve": {"type": "boolean", "title": "Run this call?",
                               "description": "true runs it; false declines it"}},
    "required": ["approve"],
}


class ToolServer:
    """The MCP server for one toolchain; ``make_session`` gives each client its session."""

    def __init__(self, toolchain: Toolchain, make_session: SessionFactory, *,
                 fallback: ConfirmFunc = auto_no, name: str = "fencecall",
                 one_client: bool = False):
        self.toolchain = toolchain
        self._make_session = make_session
        self._fallback = fallback
        self._tools = [_tool(spec) for spec in toolchain.tools if spec.is_runnable]
        self._open: set[ClientState] = set()
        self._lock = threading.Lock()
        self._only: ClientState | None = ClientState(self) if one_client else None
        self.server: Server[Any] = Server(
            name, version=__version__,
            instructions="fencecall's tools: each session has its own shell and interpreter.",
            on_list_tools=self._list_tools, on_call_tool=self._call_tool)

    def close(self) -> None:
        """Close every client's session (at shutdown)."""
        with self._lock:
            states = list(self._open)
        for state in states:
            state.close()

    # -- handlers ------------------------------------------------------------------------

    async def _list_tools(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=self._tools)

    async def _call_tool(self, ctx: Any, params: types.CallToolRequestParams
                         ) -> types.CallToolResult:
        spec = self.toolchain.get(params.name)
        if spec is None or not spec.is_runnable:
            return _error(f"Unknown tool {params.name!r}. Available tools: "
                          f"{', '.join(t.name for t in self._tools)}.")
        connection = ctx.session._connection  # the SDK exposes it only privately
        modern = connection.protocol_version in MODERN_PROTOCOL_VERSIONS
        ephemeral = modern and self._only is None
        state = self._only or (None if ephemeral else connection.state.get("fencecall"))
        if state is None:
            state = ClientState(self)
            if not ephemeral:
                connection.state["fencecall"] = state
                connection.exit_stack.push_async_callback(anyio.to_thread.run_sync,
                                                          state.close)
        elicit = None if modern else _elicitation(ctx)
        try:
            messages = await anyio.to_thread.run_sync(
                state.run, spec, dict(params.arguments or {}), elicit)
        finally:
            if ephemeral:
                await anyio.to_thread.run_sync(state.close)
        return _result(messages)


class ClientState:
    """One client session's fencecall session; calls run one at a time, as in a chat."""

    def __init__(self, server: ToolServer):
        self._server = server
        self._session: Session | None = None
        self._lock = threading.Lock()
        self._elicit: Elicit | None = None
        with server._lock:
            server._open.add(self)

    def run(self, spec: ToolSpec, arguments: dict[str, Any],
            elicit: Elicit | None) -> list[Message]:
        with self._lock:
            if self._session is None:
                self._session = self._server._make_session(self._confirm)
            self._elicit = elicit
            try:
                call = ToolCall(spec.name, kwargs=arguments, format="tool")
                message = Message("assistant", json.dumps({"tool": spec.name,
                                                           "arguments": arguments}))
                return list(self._session.execute_calls(message, [call]))
            finally:
                self._elicit = None

    def _confirm(self, request: ConfirmRequest) -> Answer:
        """Ask the client's user through elicitation; without it, the server's fallback."""
        if self._elicit is None:
            return self._server._fallback(request)
        return anyio.from_thread.run(self._elicit, request)

    def close(self) -> None:
        with self._lock:
            session, self._session = self._session, None
        if session is not None:
            session.close()
        with self._server._lock:
            self._server._open.discard(self)


Elicit = Callable[[ConfirmRequest], Coroutine[Any, Any, bool]]


def _elicitation(ctx: Any) -> Elicit | None:
    """A coroutine function asking the client's user to approve a call, if the client
    declared the elicitation capability."""
    capability = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    if not ctx.session.check_client_capability(capability):
        return None

    async def ask(request: ConfirmRequest) -> bool:
        text = _confirm_text(request)
        try:
            answer = await ctx.session.elicit_form(text, _CONFIRM_SCHEMA,
                                                   related_request_id=ctx.request_id)
        except MCPError:
            return False
        content = answer.content or {}
        return answer.action == "accept" and content.get("approve") is True

    return ask


def _confirm_text(request: ConfirmRequest) -> str:
    """The complete call, as the person deciding must see it."""
    arguments = json.dumps(dict(request.kwargs), ensure_ascii=False, indent=2, default=str)
    text = f"{request.question}\n\n{request.tool} with arguments:\n{arguments}"
    if request.preview:
        text += f"\n\nPreview:\n{request.preview}"
    return text


def _tool(spec: ToolSpec) -> types.Tool:
    description = "\n\n".join(part for part in (spec.desc, spec.instructions) if part)
    read_only = Hint.READ_ONLY in spec.hints
    return types.Tool(
        name=spec.name, description=description, input_schema=spec.json_schema(),
        annotations=types.ToolAnnotations(
            read_only_hint=read_only,
            destructive_hint=not read_only,
            open_world_hint=Hint.EXEC in spec.hints))


def _result(messages: list[Message]) -> types.CallToolResult:
    failed = any(m.failed for m in messages)
    text = "\n\n".join(m.content for m in messages) or "(no output)"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=failed)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)],
                                is_error=True)


# -- transports --------------------------------------------------------------------------------


def serve_stdio(tool_server: ToolServer) -> None:
    """Serve one client on this process's stdin and stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    async def main() -> None:
        async with stdio_server() as (read, write):
            await tool_server.server.run(read, write,
                                         tool_server.server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        tool_server.close()


def serve_http(tool_server: ToolServer, host: str, port: int, token: str | None = None,
               *, ready: Callable[[int], None] | None = None) -> None:
    """Serve Streamable HTTP at ``http://host:port/mcp`` until interrupted; with ``token``,
    each request must carry ``Authorization: Bearer <token>``. Without one, only a loopback
    address may be served (anyone who can reach the port could run the tools). Every request
    must name this server in ``Host`` and ``Origin`` (:class:`._guards.HostGuard`). ``ready``
    is told the port once the socket listens (useful with port 0)."""
    import uvicorn

    sock = _bind(host, port)
    try:
        address, bound_port = sock.getsockname()[:2]
        bound = ipaddress.ip_address(address)
        if token is None and not bound.is_loopback:
            raise UserError(f"--http {canonical_host(host)}:{port}: "
                            f"{canonical_host(address)} is not a loopback address, so anyone "
                            "who reaches it could run the tools; require a token with "
                            "--token-env VAR")
        app = tool_server.server.streamable_http_app(host=host)  # the SDK's check, if any
        authorized = app if token is None else BearerGuard(app, token)
        config = uvicorn.Config(HostGuard(authorized, host, bound, bound_port),
                                log_level="warning", lifespan="on", ws="none")
        server = uvicorn.Server(config)

        async def main() -> None:
            async with anyio.create_task_group() as group:
                group.start_soon(server.serve, [sock])
                while not server.started:
                    await anyio.sleep(0.01)
                if ready is not None:
                    ready(bound_port)

        anyio.run(main)
    finally:
        sock.close()
        tool_server.close()


def _bind(host: str, port: int) -> socket.socket:
    """The server's socket, bound (not yet listening) so the checks know its real address."""
    sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise UserError(f"--http {canonical_host(host)}:{port}: cannot listen there: "
                        f"{err.strerror or err}") from None
    return sock
