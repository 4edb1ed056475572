"""A call of a tool the run did not load, through the real command line: a one-shot run
tells the model (in its next request) and the user, and stops after the feedback limit;
``fencecall run`` names a block of an MCP tool the allowlist filtered out."""

from __future__ import annotations

import sys
from pathlib import Path

from ..fakeserver import FakeModelServer, Reply
from ..mcp_servers.conftest import FLAKY
from ..support import F
from .conftest import CLI

TOLD = (f"The shell tool is not loaded in this run, so the {F}shell block on line 3 did not "
        "run. Loaded tools: read.")


def test_a_one_shot_run_tells_the_model_and_the_user(fencecall: CLI) -> None:
    replies = [Reply(f"Let me look.\n\n{F}shell\nls\n{F}\n"), Reply("I cannot list files here.")]
    with FakeModelServer(replies) as server:
        result = fencecall("-t", "read", "--model", "local/m", "what is here?",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 2
    assert TOLD in server.requests[1].body["messages"][-1]["content"]
    assert TOLD in " ".join(result.stdout.split())


def test_a_one_shot_run_stops_after_the_feedback_limit(fencecall: CLI) -> None:
    replies = [Reply(f"Again.\n\n{F}shell\nls\n{F}\n") for _ in range(4)]
    with FakeModelServer(replies) as server:
        result = fencecall("-t", "read", "--model", "local/m", "what is here?",
                           base_url=server.openai_url)
    assert result.returncode == 6, result.stderr  # gave up
    assert "3 replies in a row" in result.stdout
    assert len(server.requests) == 3


def test_run_names_an_mcp_tool_the_allowlist_filtered_out(fencecall: CLI,
                                                         workspace: Path) -> None:
    reply = workspace.parent / "reply.md"
    reply.write_text(f'Adding:\n{F}flaky.add\n{{"a": 1, "b": 2}}\n{F}\n\n'
                     f'{F}flaky.echo\n{{"text": "hi"}}\n{F}\n')
    result = fencecall("run", "-y", "--mcp", f"flaky={sys.executable} {FLAKY}",
                       "--tools", "read,flaky.echo", str(reply), base_url="http://127.0.0.1:9")
    assert result.returncode == 1, result.stdout + result.stderr
    said = " ".join(result.stdout.split())
    assert (f"The flaky.add tool is not loaded in this run, so the {F}flaky.add block on line 2 "
            "did not run. Loaded tools: read, flaky.echo.") in said
    assert "hi" in said  # the loaded tool ran
