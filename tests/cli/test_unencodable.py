"""Text that cannot be encoded never ends a session: a lone surrogate (what JSON's
``"\\ud800"`` decodes to) in a model's reply or a tool's result, through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import CLI, claude_env, log_of

NOTE = "[1 character that could not be encoded (U+D800) was replaced with U+FFFD]"


@pytest.mark.parametrize("provider", ["local", "claude"])
def test_a_reply_holding_a_lone_surrogate_is_answered_logged_and_resumed(
        provider: str, fencecall: CLI, tmp_path: Path) -> None:
    with FakeModelServer([Reply("Broken \ud800 here."), Reply("Fine again.")]) as server:
        env = claude_env(tmp_path, server)
        first = fencecall("--model", f"{provider}/m", "--name", "odd", "hi",
                          base_url=server.openai_url, env=env)
        again = fencecall("--resume", "odd", "and now?", base_url=server.openai_url, env=env)
    assert first.returncode == 0, first.stderr
    assert "Traceback" not in first.stderr
    assert "Broken \ufffd here." in first.stdout and NOTE in first.stdout
    assert again.returncode == 0, again.stderr
    replies = [m["content"] for m in log_of(tmp_path, "odd") if m["role"] == "assistant"]
    assert replies == [f"Broken \ufffd here.\n{NOTE}", "Fine again."]
    assert NOTE in json.dumps(server.requests[1].body, ensure_ascii=False)


ODD_TOOL = (
    "from fencecall.tools import Parameter, ToolSpec\n"
    "tool = ToolSpec('odd', 'Says something odd.', execute=lambda invocation: 'odd \\ud800 '"
    " + invocation.kwargs.get('text', 'out'), hints=frozenset({'read-only'}),"
    " parameters=(Parameter('text', required=False),))\n")


def test_a_tool_result_holding_a_lone_surrogate_is_told_to_the_model(
        fencecall: CLI, tmp_path: Path, workspace: Path) -> None:
    (workspace / "odd.py").write_text(ODD_TOOL)
    with FakeModelServer([Reply(f"{F}odd\n{F}\n"), Reply("Noted.")]) as server:
        result = fencecall("--model", "local/m", "--name", "tool", "--tools", "odd.py", "go",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    [told] = [m for m in log_of(tmp_path, "tool") if m["role"] == "system"]
    assert told["content"] == f"odd \ufffd out\n{NOTE}"
    assert f"odd \ufffd out\\n{NOTE}" in json.dumps(server.requests[1].body,
                                                   ensure_ascii=False)


def test_native_call_arguments_escaping_a_lone_surrogate_are_made_safe(
        fencecall: CLI, tmp_path: Path, workspace: Path) -> None:
    """A native call's arguments are JSON text: its "\\ud800" escape is what decodes to a lone
    surrogate, so the escape is replaced where the reply comes in, and the reply says so."""
    (workspace / "odd.py").write_text(ODD_TOOL)
    call = {"id": "c1", "name": "odd", "arguments": {"text": "x\ud800y"}}
    with FakeModelServer([Reply("", tool_calls=[call]), Reply("Done.")]) as server:
        result = fencecall("--model", "local/m", "--format", "tool", "--name", "native",
                           "--tools", "odd.py", "go", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    reply, told = [m for m in log_of(tmp_path, "native") if m["role"] != "user"][:2]
    assert reply["metadata"]["tool_calls"][0]["arguments"] == {"text": "x\ufffdy"}
    assert reply["content"] == f"\n{NOTE}"
    assert told["content"] == f"odd \ufffd x\ufffdy\n{NOTE}"
