"""session/cancel: the model and the running tool stop as on Ctrl-C, a pending permission
request counts as rejected, the prompt ends ``cancelled``, and background jobs live on."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

import acp

from ..fakeserver import FakeModelServer, Reply
from ..processes import running
from ..support import F
from .conftest import Editor, editor_session, run


def test_cancel_stops_a_long_command(tmp_path: Path, workspace: Path) -> None:
    marker = f"300.{time.time_ns() % 10**9}"
    replies = [Reply(f"{F}shell 600\nsleep {marker}\n{F}\n"), Reply("Not reached.")]

    async def scenario() -> tuple[str, float, list[str]]:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off", "-y"
                                  ) as (conn, editor, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                       prompt=[acp.text_block("wait")]))
            for _ in range(200):
                if running(marker):
                    break
                await asyncio.sleep(0.05)
            assert running(marker)
            asked = time.monotonic()
            await conn.cancel(session_id=session.session_id)
            stop = (await prompt).stop_reason
            took = time.monotonic() - asked
            return str(stop), took, editor.timeline()

    with FakeModelServer(replies) as server:
        stop, took, timeline = run(scenario())
    assert stop == "cancelled"
    assert took < 3
    assert not running(marker)
    assert timeline[-1] == "tool_call_update:failed"
    assert len(server.requests) == 1  # the model was not asked again


def test_cancel_while_asking_rejects(tmp_path: Path, workspace: Path) -> None:
    editor = Editor(answer=None)  # never answers
    replies = [Reply(f"{F}shell\ntouch never-made\n{F}\n"), Reply("Not reached.")]

    async def scenario() -> str:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off",
                                  editor=editor) as (conn, _, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                       prompt=[acp.text_block("touch")]))
            await asyncio.wait_for(editor.asked.wait(), 30)
            await conn.cancel(session_id=session.session_id)
            stop = (await prompt).stop_reason
            again = await conn.prompt(session_id=session.session_id,
                                      prompt=[acp.text_block("/tools")])
            assert again.stop_reason == "end_turn"  # the session serves on
            return str(stop)

    with FakeModelServer(replies) as server:
        stop = run(scenario())
    assert stop == "cancelled"
    assert not (workspace / "never-made").exists()
    assert len(server.requests) == 1


def test_cancel_stops_the_model_stream(tmp_path: Path, workspace: Path) -> None:
    replies = [Reply("word " * 2000, chunk_size=5, delay=0.01), Reply("Not reached.")]

    async def scenario() -> tuple[str, float]:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off"
                                  ) as (conn, editor, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                       prompt=[acp.text_block("talk")]))
            while not editor.updates("agent_message_chunk"):
                await asyncio.sleep(0.02)
            asked = time.monotonic()
            await conn.cancel(session_id=session.session_id)
            stop = (await prompt).stop_reason
            return str(stop), time.monotonic() - asked

    with FakeModelServer(replies) as server:
        stop, took = run(scenario())
    assert stop == "cancelled"
    assert took < 2


def test_cancel_stops_a_silent_model(tmp_path: Path, workspace: Path) -> None:
    replies = [Reply("Late.", latency=30), Reply("Not reached.")]

    async def scenario() -> tuple[str, float]:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off"
                                  ) as (conn, _, _):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                       prompt=[acp.text_block("wait")]))
            while not server.requests:
                await asyncio.sleep(0.02)
            await asyncio.sleep(0.3)
            asked = time.monotonic()
            await conn.cancel(session_id=session.session_id)
            stop = (await prompt).stop_reason
            return str(stop), time.monotonic() - asked

    with FakeModelServer(replies) as server:
        stop, took = run(scenario())
    assert stop == "cancelled"
    assert took < 2


def test_the_end_of_input_ends_the_agent_and_its_commands(tmp_path: Path,
                                                          workspace: Path) -> None:
    marker = f"300.{time.time_ns() % 10**9}"
    replies = [Reply(f"{F}shell 600\nsleep {marker}\n{F}\n"), Reply("Not reached.")]

    async def scenario() -> int | None:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off", "-y"
                                  ) as (conn, _, process):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                       prompt=[acp.text_block("wait")]))
            while not running(marker):
                await asyncio.sleep(0.05)
            process.stdin.close()
            code = await asyncio.wait_for(process.wait(), 10)
            prompt.cancel()
            return int(code)

    with FakeModelServer(replies) as server:
        code = run(scenario())
    assert code == 0
    assert not running(marker)


def test_an_editor_gone_while_asking_is_a_rejection(tmp_path: Path, workspace: Path) -> None:
    """Nothing runs before the answer: an editor that goes away while asked declines."""
    touched = workspace / "touched"
    replies = [Reply(f"{F}shell\ntouch {touched}\n{F}\n"), Reply("Not reached.")]

    async def scenario() -> int | None:
        async with editor_session(tmp_path, server.openai_url, "--sandbox", "off",
                                  editor=Editor(answer=None)) as (conn, editor, process):
            session = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            prompt = asyncio.ensure_future(conn.prompt(session_id=session.session_id,
                                                       prompt=[acp.text_block("touch")]))
            await asyncio.wait_for(editor.asked.wait(), 30)
            process.stdin.close()
            code = await asyncio.wait_for(process.wait(), 10)
            prompt.cancel()
            return int(code)

    with FakeModelServer(replies) as server:
        code = run(scenario())
    assert code == 0
    assert not touched.exists()
