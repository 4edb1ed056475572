"""Real MCP servers for the tests: the misbehaving test server, and the reference servers
``mcp-server-time`` and ``mcp-server-git`` from PyPI, each a real process."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from fencecall.execution import Session
from fencecall.execution.confirm_policy import auto_yes
from fencecall.tools import Toolchain
from fencecall.tools.mcp import McpServerConfig, McpServers

from ..ports import free_port, wait_for_port
from ..processes import alive

__all__ = ["alive", "free_port"]  # for the server and client tests

FLAKY = Path(__file__).with_name("flaky_server.py")


def flaky(name: str = "flaky", **options: object) -> McpServerConfig:
    return McpServerConfig(name, command=sys.executable, args=(str(FLAKY), "--noisy"),
                           **options)  # type: ignore[arg-type]


@pytest.fixture
def servers(tmp_path: Path, workspace: Path) -> Iterator[McpServers]:
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path)}
    with McpServers([flaky(call_timeout=2.0)], env=env, roots=[workspace],
                    cache_dir=tmp_path / "cache") as found:
        yield found


def session_with(servers: McpServers, workspace: Path, allowlist: list[str] | None = None,
                 **options: object) -> Session:
    chain = Toolchain.build(allowlist or ["flaky.*"], extra=servers.tools(allowlist or None),
                            catalogue=[])
    return Session(chain, workspace=workspace, sandbox="off",
                   confirm=options.pop("confirm", auto_yes), **options)  # type: ignore[arg-type]


@contextmanager
def serving(command: list[str], port: int, **options: Any) -> Iterator[str]:
    """A server process listening on 127.0.0.1:``port``, ended afterwards; its MCP URL."""
    process = subprocess.Popen(command, stdout=subprocess.DEVNULL, **options)
    try:
        wait_for_port(port, process)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(15)


@pytest.fixture
def http_flaky() -> Iterator[str]:
    """The test server over Streamable HTTP on 127.0.0.1; its URL."""
    port = free_port()
    with serving([sys.executable, str(FLAKY), "--http", str(port)], port,
                 stderr=subprocess.DEVNULL) as url:
        yield url
