"""``fencecall mcp serve`` driven by the official MCP client, over stdio and Streamable HTTP."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp.types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client

from .conftest import alive, free_port, serving


def _serve_args(workspace: Path, *extra: str) -> list[str]:
    return ["-m", "fencecall.cli.main", "mcp", "serve", "--workspace", str(workspace),
            "--sandbox", "off", *extra]


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FENCECALL_")}
    env.update(FENCECALL_HOME=str(tmp_path / "home"), XDG_CONFIG_HOME=str(tmp_path / "cfg"),
               **extra)
    return env


def _stdio(workspace: Path, tmp_path: Path, *extra: str) -> Any:
    params = StdioServerParameters(command=sys.executable, args=_serve_args(workspace, *extra),
                                   env=_env(tmp_path))
    return stdio_client(params, errlog=(tmp_path / "serve.err").open("w"))


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_stdio_lists_tools_with_schemas_and_annotations(workspace: Path, tmp_path: Path) -> None:
    async def main() -> list[types.Tool]:
        async with Client(_stdio(workspace, tmp_path)) as client:
            return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in anyio.run(main)}
    assert {"shell", "save", "read", "patch", "ipython"} <= set(tools)
    assert tools["shell"].input_schema["required"] == ["command"]
    assert tools["read"].annotations and tools["read"].annotations.read_only_hint is True
    assert tools["shell"].annotations and tools["shell"].annotations.destructive_hint is True


def test_stdio_runs_only_what_needs_no_confirmation(workspace: Path, tmp_path: Path) -> None:
    (workspace / "notes.txt").write_text("a note\n")

    async def main() -> tuple[types.CallToolResult, ...]:
        async with Client(_stdio(workspace, tmp_path)) as client:
            return (await client.call_tool("read", {"path": "notes.txt"}),
                    await client.call_tool("shell", {"command": "touch made"}),
                    await client.call_tool("shell", {"command": 5}),
                    await client.call_tool("nope", {}))

    read, shell, invalid, unknown = anyio.run(main)
    assert not read.is_error and "a note" in _text(read)
    assert shell.is_error and "not confirmed" in _text(shell)
    assert not (workspace / "made").exists()
    assert invalid.is_error and "must be a string" in _text(invalid)
    assert unknown.is_error and "Unknown tool 'nope'" in _text(unknown)


def test_stdio_session_keeps_its_shell_and_clients_are_isolated(workspace: Path,
                                                                tmp_path: Path) -> None:
    async def client_session(word: str) -> tuple[str, str]:
        async with Client(_stdio(workspace, tmp_path, "-y")) as client:
            await client.call_tool("shell", {"command": f"export WORD={word}; cd /tmp"})
            seen = await client.call_tool("shell", {"command": "echo $WORD $PWD"})
            python = await client.call_tool("ipython", {"code": f"x = '{word}'"})
            assert not python.is_error, _text(python)
            again = await client.call_tool("ipython", {"code": "print(x)"})
            return _text(seen), _text(again)

    async def main() -> list[tuple[str, str]]:
        results: list[tuple[str, str]] = []

        async def one(word: str) -> None:
            results.append((word, *await client_session(word)))  # type: ignore[arg-type]

        async with anyio.create_task_group() as group:
            group.start_soon(one, "alpha")
            group.start_soon(one, "beta")
        return results

    for word, shell, python in anyio.run(main):  # type: ignore[misc]
        assert f"{word} /tmp" in shell and word in python


def test_confirmation_is_asked_by_elicitation(workspace: Path, tmp_path: Path) -> None:
    asked: list[str] = []

    def answering(approve: bool) -> Any:
        async def elicit(context: Any, params: Any) -> types.ElicitResult:
            asked.append(params.message)
            return types.ElicitResult(action="accept", content={"approve": approve})
        return elicit

    async def main() -> list[types.CallToolResult]:
        results = []
        for approve in (True, False):
            async with Client(_stdio(workspace, tmp_path), mode="legacy",
                              elicitation_callback=answering(approve)) as client:
                results.append(await client.call_tool(
                    "shell", {"command": f"touch approved-{approve}"}))
        return results

    yes, no = anyio.run(main)
    assert not yes.is_error and (workspace / "approved-True").exists()
    assert no.is_error and not (workspace / "approved-False").exists()
    assert "Run shell?" in asked[0] and "touch approved-True" in asked[0]


@pytest.fixture
def http_server(workspace: Path, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    command = [sys.executable, *_serve_args(workspace, "-y", "--http", f"127.0.0.1:{port}",
                                            "--token-env", "SERVE_TOKEN")]
    with serving(command, port, env=_env(tmp_path, SERVE_TOKEN="s3cret"),
                 stderr=subprocess.DEVNULL) as url:
        yield url


def _http(url: str, token: str, mode: str = "legacy") -> Client:
    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"})
    return Client(streamable_http_client(url, http_client=http), mode=mode)


def test_http_needs_the_token(http_server: str) -> None:
    response = httpx2.post(http_server, json={}, headers={"Authorization": "Bearer wrong"})
    assert response.status_code == 401
    assert httpx2.post(http_server, json={}).status_code == 401


def test_http_sessions_are_isolated_and_closed(http_server: str) -> None:
    async def session(word: str) -> tuple[str, int]:
        async with _http(http_server, "s3cret") as client:
            await client.call_tool("shell", {"command": f"export WORD={word}"})
            seen = _text(await client.call_tool("shell", {"command": "echo $WORD $$"}))
        return seen, int(seen.split("```")[1].split()[-1])

    async def main() -> list[tuple[str, int]]:
        return [await session("alpha"), await session("beta")]

    (first, pid1), (second, pid2) = anyio.run(main)
    assert "alpha" in first and "beta" in second and "alpha" not in second
    assert pid1 != pid2
    deadline = time.monotonic() + 10
    while (alive(pid1) or alive(pid2)) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid1) and not alive(pid2)  # each shell ended with its client session


def test_http_sessionless_protocol_gets_a_session_per_call(http_server: str) -> None:
    async def main() -> str:
        async with _http(http_server, "s3cret", mode="auto") as client:
            await client.call_tool("shell", {"command": "export WORD=kept"})
            return _text(await client.call_tool("shell", {"command": "echo [$WORD]"}))

    assert "[]" in anyio.run(main)
