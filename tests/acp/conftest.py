"""Drive ``fencecall acp`` as an editor does: the SDK's client side, the agent a
subprocess over stdio, the model a local fake server."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, cast

import acp
from acp.schema import (
    AllowedOutcome,
    ClientCapabilities,
    FileSystemCapabilities,
    Implementation,
    ReadTextFileResponse,
    RequestPermissionResponse,
    WriteTextFileResponse,
)

from ..cli.conftest import cli_env


class Editor:
    """The client: records every update and permission request, in order, and answers
    requests with ``answer`` (an option id; None: it never answers)."""

    def __init__(self, answer: str | None = "allow-once",
                 files: dict[str, str] | None = None):
        self.answer = answer
        self.events: list[Any] = []
        self.asked = asyncio.Event()
        self.files = files
        """The editor's buffers by path; with them it offers to read and write files."""
        self.file_requests: list[tuple[str, str]] = []

    async def session_update(self, session_id: str, update: Any, **kw: Any) -> None:
        self.events.append(update)

    async def request_permission(self, session_id: str, tool_call: Any, options: Any,
                                 **kw: Any) -> RequestPermissionResponse:
        self.events.append(("permission", tool_call, options))
        self.asked.set()
        if self.answer is None:
            await asyncio.Event().wait()  # the user never answers
        return RequestPermissionResponse(outcome=AllowedOutcome(outcome="selected",
                                                                option_id=str(self.answer)))

    async def read_text_file(self, session_id: str, path: str, **kw: Any
                             ) -> ReadTextFileResponse:
        assert self.files is not None
        self.file_requests.append(("read", path))
        return ReadTextFileResponse(content=self.files[path])

    async def write_text_file(self, session_id: str, path: str, content: str, **kw: Any
                              ) -> WriteTextFileResponse:
        assert self.files is not None
        self.file_requests.append(("write", path))
        self.files[path] = content
        return WriteTextFileResponse()

    def updates(self, kind: str) -> list[Any]:
        return [event for event in self.events
                if not isinstance(event, tuple) and event.session_update == kind]

    def said(self) -> str:
        return "".join(update.content.text for update in self.updates("agent_message_chunk"))

    def timeline(self) -> list[str]:
        """Each tool call update's status, and the permission requests, in order."""
        shown = []
        for event in self.events:
            if isinstance(event, tuple):
                shown.append("permission")
            elif event.session_update in ("tool_call", "tool_call_update"):
                shown.append(f"{event.session_update}:{event.status}")
        return shown


@asynccontextmanager
async def editor_session(tmp_path: Path, base_url: str, *flags: str,
                         editor: Editor | None = None,
                         ) -> AsyncIterator[tuple[Any, Editor, Any]]:
    """``fencecall acp`` started and initialized: its connection, the editor, the process."""
    editor = editor or Editor()
    stderr = (tmp_path / "agent-stderr.log").open("a")
    env = cli_env(tmp_path, base_url)
    async with acp.spawn_agent_process(
            cast(acp.Client, editor), sys.executable, "-m", "fencecall.cli.main", "acp", "--model",
            "local/test-model", *flags, env=env,
            transport_kwargs={"stderr": stderr}) as (conn, process):
        await conn.initialize(protocol_version=acp.PROTOCOL_VERSION,
                              client_capabilities=ClientCapabilities(fs=FileSystemCapabilities(
                                  read_text_file=editor.files is not None,
                                  write_text_file=editor.files is not None)),
                              client_info=Implementation(name="test-editor", version="0"))
        yield conn, editor, process
    stderr.close()


def run(scenario: Any) -> Any:
    return asyncio.run(asyncio.wait_for(scenario, 60))
