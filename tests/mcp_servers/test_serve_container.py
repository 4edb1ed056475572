"""``fencecall mcp serve --env container:IMAGE``: a client's tools run in a container of the
image (real podman, the base image of tests/containers.py), which goes when the client
does."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import anyio
import mcp.types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from fencecall.environments import LABEL

from ..containers import base_image
from .test_server import _env

__all__ = ["base_image"]


def _text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def test_a_clients_tools_run_in_a_container_removed_after_it(
        base_image: str, workspace: Path, tmp_path: Path) -> None:
    params = StdioServerParameters(command=sys.executable, args=[
        "-m", "fencecall.cli.main", "mcp", "serve", "-y", "--workspace", str(workspace),
        "--env", f"container:{base_image}"], env=_env(tmp_path))

    async def main() -> tuple[str, str, str, str]:
        async with Client(stdio_client(params, errlog=(tmp_path / "serve.err").open("w"))
                          ) as client:
            inside = _text(await client.call_tool("shell", {
                "command": "pwd; hostname; echo hi > made.txt"}))
            container = inside.split("```")[1].split()[1]  # its host name: its id's start
            assert _ours(container), inside
            saved = _text(await client.call_tool("save", {"path": "saved.txt",
                                                          "content": "from the client\n"}))
            python = _text(await client.call_tool("ipython", {
                "code": "print(open('saved.txt').read() + open('made.txt').read())"}))
            return inside, container, saved, python

    inside, container, saved, python = anyio.run(main)
    assert inside.split("```")[1].split()[0] == "/work", inside  # the image's WORKDIR
    assert "Created saved.txt" in saved, saved
    assert "from the client\nhi" in python, python
    assert (workspace / "made.txt").read_text() == "hi\n"  # the container's working folder
    assert not _ours(container)


def _ours(container: str) -> bool:
    """Whether ``container`` is one of fencecall's (labelled) that exists now."""
    done = subprocess.run(["podman", "ps", "--all", "--quiet", "--filter", f"id={container}",
                           "--filter", f"label={LABEL}"], capture_output=True, text=True,
                          timeout=60, check=True)
    return bool(container) and bool(done.stdout.strip())
