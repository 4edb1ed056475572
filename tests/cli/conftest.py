"""Run the real CLI in a subprocess against a local fake model server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ..fakeserver import FakeModelServer

REPLIES = Path(__file__).parent.parent / "fixtures" / "replies"
CLI = Callable[..., subprocess.CompletedProcess[str]]


def recorded(name: str) -> str:
    return (REPLIES / name).read_text()


def cli_env(home: Path, base_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("FENCECALL_", "OPENAI_", "ANTHROPIC_"))}
    env.update(FENCECALL_HOME=str(home / "home"), XDG_CONFIG_HOME=str(home / "config"),
               FENCECALL_LOCAL_BASE_URL=base_url, PYTHONUNBUFFERED="1", **extra)
    return env


def claude_env(tmp_path: Path, server: FakeModelServer) -> dict[str, str]:
    """:func:`cli_env` with a config file that adds the provider ``claude``: the Anthropic
    API, at ``server`` (so ``--model claude/m`` streams through the Anthropic SDK)."""
    config = tmp_path / "config" / "fencecall" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(f'[providers.claude]\nkind = "anthropic"\nbase_url = "{server.base_url}"\n')
    return cli_env(tmp_path, server.openai_url)


@pytest.fixture
def fencecall(tmp_path: Path, workspace: Path) -> CLI:
    def run(*args: str, base_url: str, env: dict[str, str] | None = None,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        where = [] if args[:1] in (("list",), ("stats",), ("export",)) else [
            "--workspace", str(workspace)]
        return subprocess.run(
            [sys.executable, "-m", "fencecall.cli.main", *args, *where],
            env=env or cli_env(tmp_path, base_url), input=stdin, capture_output=True,
            text=True, timeout=120)

    return run


def log_of(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    """The messages of a conversation's log, as written (settings records left out)."""
    path = tmp_path / "home" / "conversations" / name / "conversation.jsonl"
    records = [json.loads(line) for line in path.read_text().splitlines()]
    return [record for record in records if record["op"] == "message"]
