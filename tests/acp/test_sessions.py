"""Sessions are conversations on disk: loaded after a restart with their history replayed,
errors answered as JSON-RPC errors, slash commands advertised, the editor's MCP servers
connected."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import acp
import pytest
from acp.schema import McpServerStdio

from fencecall.agent import Conversation

from ..fakeserver import FakeModelServer, Reply
from ..mcp_servers.conftest import FLAKY
from ..support import F, needs_bwrap
from .conftest import Editor, editor_session, run


def test_a_session_loads_after_a_restart(tmp_path: Path, workspace: Path) -> None:
    replies = [Reply(f"{F}shell\necho first-turn\n{F}\n"), Reply("First done."),
               Reply("Second done.")]

    async def first() -> str:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off", "-y"
                                  ) as (conn, _, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("one")])
            return str(session.session_id)

    async def second(name: str) -> Editor:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off", "-y"
                                  ) as (conn, editor, _):
            await conn.load_session(cwd=str(workspace), session_id=name, mcp_servers=[])
            replayed = list(editor.events)
            done = await conn.prompt(session_id=name, prompt=[acp.text_block("two")])
            assert done.stop_reason == "end_turn"
            editor.events[:] = replayed
            return editor

    with FakeModelServer(replies) as server:
        name = run(first())
        editor = run(second(name))
    kinds = [event.session_update for event in editor.events]
    assert kinds[:5] == ["user_message_chunk", "agent_message_chunk", "tool_call",
                         "tool_call_update", "agent_message_chunk"]
    assert editor.events[0].content.text == "one"
    assert "first-turn" in editor.events[3].content[0].content.text
    assert editor.events[3].status == "completed"
    assert editor.events[4].content.text == "First done."
    asked = [m["content"] for m in server.requests[2].body["messages"] if m["role"] == "user"]
    assert (asked[0], asked[-1]) == ("one", "two")  # the history went to the model
    assert "first-turn" in asked[1]
    names = [info.name for info in Conversation.list_all(tmp_path / "home")]
    assert names == [name]


def test_errors_are_answered_and_the_agent_serves_on(tmp_path: Path, workspace: Path) -> None:
    async def scenario() -> list[tuple[int, str]]:
        async with editor_session(tmp_path, server.openai_url) as (conn, _, process):
            errors = []
            for call in (conn.prompt(session_id="nope", prompt=[acp.text_block("x")]),
                         conn.load_session(cwd=str(workspace), session_id="missing",
                                           mcp_servers=[]),
                         conn._conn.send_request("session/bogus", {})):
                with pytest.raises(acp.RequestError) as caught:
                    await call
                errors.append((caught.value.code, str(caught.value)))
            process.stdin.write(b"{this is not json\n")
            await process.stdin.drain()
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert session.session_id
            return errors

    with FakeModelServer([]) as server:
        errors = run(scenario())
    (unknown_code, unknown), (missing_code, missing), (method_code, _) = errors
    assert unknown_code == -32602 and "unknown session 'nope'" in unknown
    assert missing_code == -32002 and "missing" in missing
    assert method_code == -32601


def test_slash_commands_are_advertised_and_run(tmp_path: Path, workspace: Path) -> None:
    async def scenario() -> Editor:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off"
                                  ) as (conn, editor, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            while not editor.updates("available_commands_update"):
                await asyncio.sleep(0.02)
            done = await conn.prompt(session_id=session.session_id,
                                     prompt=[acp.text_block("/tools")])
            assert done.stop_reason == "end_turn"
            return editor

    with FakeModelServer([]) as server:
        editor = run(scenario())
    names = {c.name for c in editor.updates("available_commands_update")[0].available_commands}
    assert {"help", "tools", "compact", "jobs", "undo"} <= names
    assert "exit" not in names
    assert "shell" in editor.said()
    assert server.requests == []  # a command is no prompt for the model


def test_the_editors_mcp_server_is_connected(tmp_path: Path, workspace: Path) -> None:
    replies = [Reply(f"{F}flaky.echo\nfrom the editor's server\n{F}\n"), Reply("Echoed.")]
    declared = McpServerStdio(name="flaky", command=sys.executable, args=[str(FLAKY)], env=[])

    async def scenario() -> Editor:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off"
                                  ) as (conn, editor, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[declared])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("echo")])
            return editor

    with FakeModelServer(replies) as server:
        editor = run(scenario())
    assert editor.timeline() == ["tool_call:pending", "tool_call_update:in_progress",
                                 "tool_call_update:completed"]  # read-only: not asked
    assert editor.updates("tool_call")[0].kind == "other"
    assert "from the editor's server" in server.requests[1].body["messages"][-1]["content"]


@needs_bwrap
def test_the_sandbox_runs_read_only_commands_unasked(tmp_path: Path, workspace: Path) -> None:
    (workspace / "seen.txt").write_text("")
    replies = [Reply(f"{F}shell\nls\n{F}\n"), Reply(f"{F}shell\ntouch asked.txt\n{F}\n"),
               Reply("Done.")]

    async def scenario() -> Editor:
        async with editor_session(tmp_path, server.openai_url) as (conn, editor, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("look")])
            return editor

    with FakeModelServer(replies) as server:
        editor = run(scenario())
    assert editor.timeline() == [
        "tool_call:pending", "tool_call_update:in_progress", "tool_call_update:completed",
        "tool_call:pending", "permission", "tool_call_update:in_progress",
        "tool_call_update:completed"]
    assert "seen.txt" in editor.updates("tool_call_update")[1].content[0].content.text
    assert (workspace / "asked.txt").exists()


def test_a_failing_model_is_an_error_with_its_message(tmp_path: Path, workspace: Path) -> None:
    async def scenario() -> tuple[int, str, str]:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off"
                                  ) as (conn, _, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            with pytest.raises(acp.RequestError) as caught:
                await conn.prompt(session_id=session.session_id, prompt=[acp.text_block("x")])
            again = await conn.prompt(session_id=session.session_id,
                                      prompt=[acp.text_block("y")])
            return caught.value.code, str(caught.value), str(again.stop_reason)

    with FakeModelServer([Reply(status=400), Reply("Back.")]) as server:
        code, message, stop = run(scenario())
    assert code == -32603 and "400" in message
    assert stop == "end_turn"
