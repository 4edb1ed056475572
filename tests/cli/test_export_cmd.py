"""``fencecall export``: a real session (a shell call cut at its call, a failed call, an
answer a hostile model wrote), run with ``--logprobs`` against the fake server, exported
as ATIF (valid by Harbor's own models), markdown and HTML."""

from __future__ import annotations

import json
from pathlib import Path

from ..atif_shape import check_shape
from ..fakeserver import FakeModelServer, Reply
from ..harbor import validate
from .conftest import CLI

CALL = ["Let", " me", " look", ".\n", "```", "shell", "\n", "echo", " hello", "\n", "```\n",
        "Output", ":", " made", " up", "\n"]
"""A reply that writes past its call: the text and the tokens after it are not kept."""
HOSTILE = ('Done. <script>alert("x")</script></pre></section>'
           '<img src=x onerror=alert(1)> # Heading? ``` and ````')


def scored(tokens: list[str]) -> Reply:
    return Reply("".join(tokens), logprobs=[(t, -0.25 * (i % 4)) for i, t in enumerate(tokens)],
                 token_ids=[1000 + i for i in range(len(tokens))], usage=(40, len(tokens)))


def _session(fencecall: CLI, tmp_path: Path) -> FakeModelServer:
    replies = [scored(CALL), Reply("```read no-such-file.txt\n```\n"),
               Reply(HOSTILE)]
    with FakeModelServer(replies) as server:
        done = fencecall("-y", "--logprobs", "--model", "local/m", "--name", "ex",
                         "look around", base_url=server.openai_url)
    assert done.returncode == 0, done.stderr
    return server


def test_a_session_exports_as_a_valid_trajectory_with_its_kept_logprobs(
        fencecall: CLI, tmp_path: Path) -> None:
    server = _session(fencecall, tmp_path)
    assert server.requests[0].body["logprobs"] is True
    out = tmp_path / "ex.json"
    done = fencecall("export", "ex", "--format", "atif", "-o", str(out), base_url="http://x")
    assert done.returncode == 0, done.stderr
    doc = json.loads(out.read_text())
    check_shape(doc)
    assert validate(out) == "ATIF-v1.8 4"
    user, first, second, last = doc["steps"]
    assert (user["source"], user["message"]) == ("user", "look around")
    assert first["message"] == "Let me look.\n```shell\necho hello\n```"
    [call] = first["tool_calls"]
    assert (call["function_name"], call["arguments"]) == ("shell", {"command": "echo hello"})
    [result] = first["observation"]["results"]
    assert result["source_call_id"] == call["tool_call_id"] and "hello" in result["content"]
    metrics = first["metrics"]
    assert metrics["extra"]["completion_tokens_text"] == CALL[:11]  # as far as it was kept
    assert metrics["logprobs"] == [-0.25 * (i % 4) for i in range(11)]
    assert metrics["completion_token_ids"] == [1000 + i for i in range(11)]
    [failed] = second["observation"]["results"]
    assert second["tool_calls"][0]["function_name"] == "read"
    assert failed["extra"]["outcome"] == "error"
    assert last["message"] == HOSTILE and "tool_calls" not in last
    assert doc["session_id"] == "ex" and doc["agent"]["name"] == "fencecall"
    assert doc["final_metrics"]["total_steps"] == 4


def test_markdown_and_html_are_readable_and_escape_what_the_model_wrote(
        fencecall: CLI, tmp_path: Path) -> None:
    _session(fencecall, tmp_path)
    markdown = fencecall("export", "ex", base_url="http://x")
    assert markdown.returncode == 0, markdown.stderr
    text = markdown.stdout
    for said in ("# Conversation ex", "## User", "look around", "### Call shell (call-2-1): ok",
                 '"command": "echo hello"', "### Call read (call-3-1): error", "## Totals",
                 HOSTILE):
        assert said in text, said
    assert "`````text\n" + HOSTILE + "\n`````" in text  # a fence the reply cannot close
    page = fencecall("export", "ex", "--format", "html", base_url="http://x").stdout
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert "<script" not in page and "<img" not in page and "http" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in page
    assert page.count("<section") == page.count("</section>") == 4


def test_a_missing_conversation_is_a_usage_error(fencecall: CLI) -> None:
    done = fencecall("export", "nope", "--format", "atif", base_url="http://x")
    assert done.returncode == 2
    assert "no conversation called 'nope'" in done.stderr and not done.stdout
