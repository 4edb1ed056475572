"""``--resume`` picks up a conversation as it was: its settings, and calls it left running."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from fencecall.agent import Conversation
from fencecall.message import Message

from ..fakeserver import FakeModelServer, Reply
from .conftest import cli_env


def chat(tmp_path: Path, url: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fencecall.cli.main", *args],
                          env=cli_env(tmp_path, url), cwd=tmp_path, capture_output=True,
                          text=True, timeout=120, stdin=subprocess.DEVNULL)


def test_resume_restores_model_format_tools_and_workspace(tmp_path: Path) -> None:
    workspace = tmp_path / "project"
    with FakeModelServer([Reply("First."), Reply("Second."), Reply("Third.")]) as server:
        first = chat(tmp_path, server.openai_url, "--model", "local/m1", "--format", "xml",
                     "--tools", "shell,read", "--workspace", str(workspace), "--name", "r",
                     "one")
        assert first.returncode == 0, first.stderr
        again = chat(tmp_path, server.openai_url, "--resume", "r", "two")
        assert again.returncode == 0, again.stderr
        changed = chat(tmp_path, server.openai_url, "--resume", "r", "--format", "markdown",
                       "three")
        assert changed.returncode == 0, changed.stderr
    second = server.requests[1].body
    system = second["messages"][0]["content"]
    assert second["model"] == "m1"
    assert f"The workspace is {workspace}" in system and "<tool-use>" in system
    assert "## read" in system and "## save" not in system
    third = server.requests[2].body["messages"][0]["content"]
    assert "<tool-use>" not in third and "fenced code block" in third


def test_calls_left_running_are_answered_on_resume(tmp_path: Path) -> None:
    home = tmp_path / "home"
    conversation = Conversation.create(home, "crashed")
    conversation.remember({"model": "local/m", "format": "tool", "tools": "shell"})
    conversation.append(Message("user", "do two things"))
    calls = [{"id": "c1", "name": "shell", "arguments": {"command": "make"}},
             {"id": "c2", "name": "shell", "arguments": {"command": "make test"}}]
    conversation.append(Message("assistant", "", metadata={"tool_calls": calls}))
    conversation.append(Message("system", "built", call_id="c1", metadata={"tool": "shell"}))
    conversation.close()
    with FakeModelServer([Reply("I will check the test run.")]) as server:
        result = chat(tmp_path, server.openai_url, "--resume", "crashed", "-w",
                      str(tmp_path / "w"))
    assert result.returncode == 0, result.stderr
    tool_messages = [m for m in server.requests[0].body["messages"] if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tool_messages] == ["c1", "c2"]
    assert "fencecall stopped while it was running" in tool_messages[1]["content"]
    assert conversation.path is not None
    log = [json.loads(line) for line in conversation.path.read_text().splitlines()]
    assert log[-2]["call_id"] == "c2" and log[-2]["metadata"]["status"] == "interrupted"
