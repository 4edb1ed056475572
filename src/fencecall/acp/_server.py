"""The protocol side: ``initialize``, ``session/new``, ``session/load``, ``session/prompt``
and ``session/cancel``, answered for the SDK's connection (:func:`acp.run_agent`).

Capabilities are advertised as they are: sessions load, prompts may hold text and embedded
text resources (given to the model as fenced text), and the editor's MCP servers, stdio or
Streamable HTTP, are connected like configured ones. Where the editor offers to read and
write files, the file tools go through it (:mod:`._editor_files`). Whatever fails (an unknown
session, a conversation that is not there, a configuration error) is a JSON-RPC error with a
message; the process keeps serving.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

import acp
from acp.schema import (
    AgentCapabilities,
    Implementation,
    InitializeResponse,
    LoadSessionResponse,
    McpCapabilities,
    NewSessionResponse,
    PromptCapabilities,
    PromptResponse,
)

from .. import __version__
from ..agent import Agent, Conversation, ConversationError, EventSink
from ..assembly import NO_MODEL, NoModel, assemble, resolve_settings
from ..cli.options import overrides_of
from ..cli.visible import visible
from ..config import Config
from ..errors import UserError
from ..providers import ProviderError
from ..tools import ConfirmFunc
from ..tools.mcp import DeclarationError, McpServerConfig
from ._editor_files import EditorFiles
from ._sessions import AcpSession, Link, replay
from ._text import fenced

INVALID_PARAMS, INTERNAL, NOT_FOUND = -32602, -32603, -32002


def _error(code: int, message: str) -> NoReturn:
    raise acp.RequestError(code, visible(message))


def mcp_server(declared: Any) -> McpServerConfig:
    """An MCP server the editor passed, as fencecall declares one (stdio or HTTP)."""
    try:
        if getattr(declared, "url", None) is not None:
            if getattr(declared, "type", "http") != "http":
                _error(INVALID_PARAMS, f"MCP server {declared.name!r}: only stdio and "
                                       "Streamable HTTP servers are supported")
            return McpServerConfig(declared.name, url=declared.url,
                                   headers={h.name: h.value for h in declared.headers})
        return McpServerConfig(declared.name, command=declared.command,
                               args=tuple(declared.args),
                               env={v.name: v.value for v in declared.env})
    except (DeclarationError, ValueError) as err:
        _error(INVALID_PARAMS, f"MCP server {declared.name!r}: {err}")


def prompt_text(blocks: Sequence[Any]) -> str:
    """The prompt as the model reads it: its text, and each embedded text resource fenced
    under its URI."""
    parts = []
    for block in blocks:
        if block.type == "text":
            parts.append(block.text)
        elif block.type == "resource" and getattr(block.resource, "text", None) is not None:
            parts.append(f"{block.resource.uri}:\n{fenced(block.resource.text)}")
        elif block.type == "resource_link":
            parts.append(block.uri)
        else:
            _error(INVALID_PARAMS, f"{block.type} content is not supported; send text")
    return "\n\n".join(parts)


class FencecallAgent:
    """The ACP agent: the flags (``args``) and configuration every session is built with,
    and the sessions open in this process."""

    def __init__(self, args: argparse.Namespace, config: Config, secrets: Mapping[str, str]):
        self._args = args
        self._config = config
        self._secrets = secrets
        self.sessions: dict[str, AcpSession] = {}
        self._link: Link | None = None
        self._editor_files = False
        """Whether the editor reads and writes files for the tools (it offers both)."""

    def on_connect(self, conn: Any) -> None:
        self._link = Link(conn, asyncio.get_running_loop())

    async def initialize(self, protocol_version: int, client_capabilities: Any = None,
                         client_info: Any = None, **kw: Any) -> InitializeResponse:
        fs = getattr(client_capabilities, "fs", None)
        self._editor_files = bool(fs and fs.read_text_file and fs.write_text_file)
        return InitializeResponse(
            protocol_version=min(protocol_version, acp.PROTOCOL_VERSION),
            agent_capabilities=AgentCapabilities(
                load_session=True, prompt_capabilities=PromptCapabilities(embedded_context=True),
                mcp_capabilities=McpCapabilities(http=True)),
            agent_info=Implementation(name="fencecall", title="fencecall", version=__version__))

    async def new_session(self, cwd: str, mcp_servers: Sequence[Any] | None = None,
                          **kw: Any) -> NewSessionResponse:
        session = await self._open(cwd, mcp_servers or (), None)
        self._advertise(session)
        return NewSessionResponse(session_id=session.id)

    async def load_session(self, cwd: str, session_id: str,
                           mcp_servers: Sequence[Any] | None = None,
                           **kw: Any) -> LoadSessionResponse:
        old = self.sessions.pop(session_id, None)
        if old is not None:
            await asyncio.to_thread(old.close)
        session = await self._open(cwd, mcp_servers or (), session_id)
        link = self._connected()
        for update in replay(session.agent.conversation.messages):
            await link.conn.session_update(session.id, update)
        self._advertise(session)
        return LoadSessionResponse()

    async def prompt(self, session_id: str, prompt: Sequence[Any],
                     **kw: Any) -> PromptResponse:
        session = self._session(session_id)
        text = prompt_text(prompt)
        try:
            running = session.start(text)
        except RuntimeError as err:
            _error(INVALID_PARAMS, str(err))
        try:
            stop = await asyncio.wrap_future(running)
        except (ProviderError, UserError) as err:  # the model's server failed, a limit
            _error(INTERNAL, str(err))
        return PromptResponse(stop_reason=stop)

    async def cancel(self, session_id: str, **kw: Any) -> None:
        session = self.sessions.get(session_id)
        if session is not None:
            session.cancel()

    def close(self) -> None:
        """Close every session: their tools' processes end, their logs are complete."""
        for session in self.sessions.values():
            session.close()
        self.sessions.clear()

    def _connected(self) -> Link:
        assert self._link is not None, "on_connect comes first"
        return self._link

    def _session(self, session_id: str) -> AcpSession:
        session = self.sessions.get(session_id)
        if session is None:
            _error(INVALID_PARAMS, f"unknown session {session_id!r}: start one with "
                                   "session/new or load it with session/load")
        return session

    def _advertise(self, session: AcpSession) -> None:
        """The session's commands, said once the response naming the session went out."""
        link = self._connected()
        update = session.commands_update()
        link.loop.call_soon(lambda: asyncio.ensure_future(
            link.conn.session_update(session.id, update)))

    async def _open(self, cwd: str, mcp_servers: Sequence[Any], name: str | None) -> AcpSession:
        servers = tuple(mcp_server(declared) for declared in mcp_servers)
        link = self._connected()
        try:
            session = await asyncio.to_thread(
                AcpSession, link, self._builder(Path(cwd), servers, name), yes=self._args.yes)
        except ConversationError as err:  # none of that name, or a name that is none
            _error(NOT_FOUND, str(err))
        except UserError as err:  # a configuration error, no model, a workspace refused
            _error(INVALID_PARAMS, str(err))
        if self._editor_files:
            session.agent.session.use_editor(EditorFiles(link, session.id))
        self.sessions[session.id] = session
        return session

    def _builder(self, cwd: Path, servers: tuple[McpServerConfig, ...],
                 name: str | None) -> Callable[[ConfirmFunc, EventSink], Agent]:
        """How the session's agent is made: the flags, the editor's folder as the workspace
        (unless ``--workspace``), its MCP servers besides the configured ones, and the
        conversation ``name`` (None: a new one)."""
        config = self._config
        flags = overrides_of(self._args)
        flags = replace(flags, workspace=flags.workspace or cwd, mcp=(*flags.mcp, *servers),
                        autonomous=False)

        def build(confirm: ConfirmFunc, on_event: EventSink) -> Agent:
            settings = resolve_settings(config, flags, ask_server=True)
            if settings.model is None:
                raise NoModel(NO_MODEL)
            existing = None if name is None else Conversation.open(config.home, name)

            def logged() -> Conversation:
                conversation = existing or Conversation.create(config.home)
                conversation.remember({
                    "model": settings.model, "format": settings.format.name,
                    "tools": self._args.tools, "workspace": str(settings.workspace),
                    "roots": [str(r) for r in settings.roots[1:]],
                    "sandbox": str(settings.sandbox), "mcp": list(self._args.mcp),
                    "network": settings.network})
                return conversation

            return assemble(settings, config, confirm=confirm, conversation=logged,
                            on_event=on_event, secrets=self._secrets, warn=_warn,
                            interruptible=True)  # a cancel stops a silent model too

        return build


def _warn(text: str) -> None:
    print(f"fencecall: warning: {visible(text)}", file=sys.stderr, flush=True)
