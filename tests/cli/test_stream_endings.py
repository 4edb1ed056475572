"""A misbehaving model server, through the real CLI: no stream ending is taken for an answer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import CLI, claude_env, log_of


@pytest.mark.parametrize("provider", ["local", "claude"])
def test_a_stream_that_breaks_off_is_asked_for_again(provider: str, fencecall: CLI,
                                                     tmp_path: Path) -> None:
    with FakeModelServer([Reply("The answer is forty", cut_after=3),
                          Reply("The answer is 42.")]) as server:
        env = claude_env(tmp_path, server)
        result = fencecall("--model", f"{provider}/m", "--name", "b", "--retries", "1",
                           "ask", base_url=server.openai_url, env=env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(server.requests) == 2
    assert "retrying" in result.stdout.lower() or "retrying" in result.stderr.lower()
    assert [m["content"] for m in log_of(tmp_path, "b") if m["role"] == "assistant"] == [
        "The answer is 42."]


@pytest.mark.parametrize("broken", [Reply("half", cut_after=2), Reply("text", garbage=True)])
def test_a_stream_that_keeps_breaking_is_an_error_naming_provider_and_url(
        broken: Reply, fencecall: CLI, tmp_path: Path) -> None:
    with FakeModelServer([broken, broken]) as server:
        result = fencecall("--model", "local/m", "--name", "k", "--retries", "1", "ask",
                           base_url=server.openai_url)
    assert result.returncode == 1
    said = result.stdout + result.stderr
    assert f"local ({server.openai_url}/)" in said or f"local ({server.openai_url})" in said
    assert "stream" in said
    assert all(m["role"] != "assistant" for m in log_of(tmp_path, "k"))


def test_a_reply_cut_at_the_token_limit_is_continued(fencecall: CLI, tmp_path: Path) -> None:
    replies = [Reply("Part one of a long", finish="length"), Reply(" story. The end.")]
    with FakeModelServer(replies) as server:
        result = fencecall("--model", "local/m", "--name", "c", "--max-tokens", "7", "tell",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert server.requests[0].body["max_tokens"] == 7
    log = log_of(tmp_path, "c")
    assert log[1]["metadata"]["cut"] == "length"
    assert "cut off at the output token limit (7 tokens)" in log[2]["content"]
    assert log[3]["content"] == " story. The end."


def test_a_content_filter_stop_is_no_answer(fencecall: CLI, tmp_path: Path) -> None:
    with FakeModelServer([Reply("I can", finish="content_filter")]) as server:
        result = fencecall("--model", "local/m", "--name", "f", "x", base_url=server.openai_url)
    assert result.returncode == 1
    assert "content filter" in result.stdout + result.stderr


def test_an_overloaded_server_is_retried_after_its_retry_after(fencecall: CLI,
                                                              tmp_path: Path) -> None:
    with FakeModelServer([Reply(status=503, retry_after="0"), Reply("fine")]) as server:
        result = fencecall("--model", "local/m", "--name", "o", "x", base_url=server.openai_url)
    assert result.returncode == 0, result.stdout + result.stderr
    assert len(server.requests) == 2


def test_a_whole_reply_in_one_chunk_is_cut_after_its_first_call(fencecall: CLI,
                                                                tmp_path: Path) -> None:
    text = f"Listing.\n{F}shell\necho real\n{F}\nResult: fake output\n{F}shell\necho two\n{F}\n"
    with FakeModelServer([Reply(text, chunk_size=10_000), Reply("done")]) as server:
        result = fencecall("-y", "--model", "local/m", "--name", "one", "go",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    [reply] = [m for m in log_of(tmp_path, "one") if m["role"] == "assistant"][:1]
    assert reply["content"] == f"Listing.\n{F}shell\necho real\n{F}"
    sent = json.dumps(server.requests[1].body["messages"])
    assert "fake output" not in sent and "echo two" not in sent


@pytest.mark.parametrize("flag", [["--max-steps", "0"], ["--retries", "-1"],
                                  ["--request-timeout", "0"], ["--timeout", "0"],
                                  ["--max-tokens", "x"]])
def test_bad_numbers_are_errors(flag: list[str], fencecall: CLI) -> None:
    result = fencecall("--model", "local/m", *flag, "x", base_url="http://127.0.0.1:9")
    assert result.returncode == 2
    assert flag[0] in result.stderr

