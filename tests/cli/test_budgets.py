"""Budgets hold: each request is sent only if its worst case fits what is left, counted by
the server's own tokenizer; a USD budget without a price never starts; the time limit ends a
running command and the run."""

from __future__ import annotations

import re
import subprocess
import time
from pathlib import Path

import pytest

from ..fakeserver import FakeModelServer, Reply, dense_tokens
from ..support import F
from .conftest import CLI, log_of


def _configure(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config" / "fencecall" / "config.toml"  # where cli_env points
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


def test_an_unpriced_model_with_a_usd_budget_refuses_to_start(fencecall: CLI) -> None:
    with FakeModelServer([Reply("Hi.")]) as server:
        result = fencecall("--model", "local/m", "--budget-usd", "1", "hi",
                           base_url=server.openai_url)
    assert result.returncode == 2, result.stderr
    assert "the price of local/m is unknown" in result.stderr
    assert '[models."local/m"] price = {input = USD, output = USD}' in result.stderr
    assert server.requests == []


def test_replies_that_keep_failing_to_parse_stop_at_the_token_budget(
        fencecall: CLI, tmp_path: Path) -> None:
    _configure(tmp_path, "feedback_limit = 100\n")
    replies = [Reply(f"{F}python\nprint({i})\n{F}\n") for i in range(40)]  # no such tool
    budget, reply_limit = 30_000, 200
    with FakeModelServer(replies, tokenizer=dense_tokens) as server:
        result = fencecall("--model", "local/m", "--name", "b", "--budget-tokens",
                           str(budget), "--max-tokens", str(reply_limit), "compute",
                           base_url=server.openai_url)
    assert result.returncode == 3, result.stderr
    assert "Stopped by the token budget" in result.stdout
    sent = server.requests
    assert 2 <= len(sent) < len(replies)
    assert server.billed() <= budget * 1.02  # every request's worst case fitted
    # and the one not sent would not have: its input at least the last one's
    assert server.billed() + sent[-1].input_tokens + reply_limit > budget * 0.98
    assert log_of(tmp_path, "b")[-1]["metadata"] == {"ending": "budget",
                                                       "limit": "budget-tokens"}


def test_a_session_of_cut_replies_stops_within_one_request_of_its_usd_cap(
        fencecall: CLI, tmp_path: Path) -> None:
    per_token = 0.001  # USD: 1000 USD per million tokens, in and out
    _configure(tmp_path, '[models."local/m"]\nprice = {input = 1000, output = 1000}\n')
    replies = [Reply(f"Step {i}.\n{F}shell\necho {i}\n{F}\nThen I will explain at length. "
                     * 3) for i in range(60)]
    cap, reply_limit = 40.0, 300
    with FakeModelServer(replies, tokenizer=dense_tokens) as server:
        result = fencecall("-y", "--model", "local/m", "--budget-usd", str(cap),
                           "--max-tokens", str(reply_limit), "go", base_url=server.openai_url)
    assert result.returncode == 3, result.stderr
    assert "Stopped by the USD budget" in result.stdout
    assert len(server.requests) < len(replies)
    spent = server.billed() * per_token  # by the server's own count
    worst = (server.requests[-1].input_tokens + reply_limit) * per_token
    # fencecall holds the cap by its own count of the cut replies, which is within 2% of the
    # server's (the wire wraps tool results a little differently)
    assert cap - worst <= spent <= cap * 1.02


def test_the_time_limit_ends_a_running_command_and_the_run(fencecall: CLI,
                                                          workspace: Path) -> None:
    marker = "613.25"  # a sleep no other process runs
    replies = [Reply(f"{F}shell\nsleep {marker}\n{F}\n"), Reply("Done.")]
    with FakeModelServer(replies) as server:
        started = time.monotonic()
        result = fencecall("-y", "--model", "local/m", "--time-limit", "5", "wait",
                           base_url=server.openai_url)
        took = time.monotonic() - started
    assert result.returncode == 4, result.stderr
    assert took < 9, took  # the limit, a start and a stop on a busy machine: not the sleep
    assert "Stopped by the time limit" in result.stdout
    assert len(server.requests) == 1
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert left.stdout == "", left.stdout


def test_a_broken_stream_asked_for_again_is_counted_too(fencecall: CLI, tmp_path: Path) -> None:
    replies = [Reply("A long answer that breaks off " * 5, cut_after=4),
               Reply("A long answer that arrives.")]
    with FakeModelServer(replies, tokenizer=dense_tokens) as server:
        result = fencecall("--model", "local/m", "--name", "br", "hi",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    first, second = server.requests
    answer = next(r for r in log_of(tmp_path, "br") if r["role"] == "assistant")
    usage = answer["metadata"]["usage"]
    # the reported usage of the second request, plus fencecall's count of the broken one
    assert usage["input_tokens"] >= second.input_tokens + first.input_tokens * 0.98
    assert usage["output_tokens"] >= second.output_tokens + first.output_tokens


def test_a_resumed_conversation_says_what_it_spent_and_goes_on_under_new_limits(
        fencecall: CLI, tmp_path: Path) -> None:
    _configure(tmp_path, '[models."local/m"]\nprice = {input = 1000, output = 1000}\n')
    replies = [Reply(f"{F}shell\necho {i}\n{F}\n") for i in range(3)] + [Reply("Done.")]
    with FakeModelServer(replies, tokenizer=dense_tokens) as server:
        first = fencecall("-y", "--model", "local/m", "--name", "r", "--budget-tokens", "1",
                          "go", base_url=server.openai_url)
        assert first.returncode == 3 and server.requests == []
        again = fencecall("-y", "--resume", "r", "--budget-usd", "1000", "go on",
                          base_url=server.openai_url)
    assert again.returncode == 0, again.stderr
    assert "fencecall: spent so far 0 tokens, $0.0000" in again.stderr
    assert len(server.requests) == 4


def test_what_the_chat_template_adds_is_learned_from_a_reported_reply(
        fencecall: CLI, tmp_path: Path) -> None:
    replies = [Reply("Let me look."), *(Reply(f"{F}shell\necho {i}\n{F}\nmore") for i in range(3)),
               Reply("Done.")]
    with FakeModelServer(replies, tokenizer=dense_tokens, template_tokens=40) as server:
        assert fencecall("-y", "--model", "local/m", "--name", "t", "look",
                         base_url=server.openai_url).returncode == 0
        assert fencecall("-y", "--resume", "t", "go on",
                         base_url=server.openai_url).returncode == 0
    counted = [r["metadata"]["usage"]["input_tokens"] for r in log_of(tmp_path, "t")
               if r["role"] == "assistant" and "usage_counted" in r.get("metadata", {})]
    billed = [r.input_tokens for r in server.requests[1:4]]  # the resumed run's cut replies
    assert len(counted) == 3
    for mine, theirs in zip(counted, billed, strict=True):  # the 40 template tokens counted
        assert abs(mine - theirs) <= theirs * 0.01, (counted, billed)


def test_the_time_limit_cuts_a_reply_still_streaming(fencecall: CLI, tmp_path: Path) -> None:
    slow = Reply("word " * 200, chunk_size=5, delay=0.05)  # ten seconds of streaming
    with FakeModelServer([slow]) as server:
        started = time.monotonic()
        result = fencecall("--model", "local/m", "--name", "slow", "--time-limit", "2", "talk",
                           base_url=server.openai_url)
        took = time.monotonic() - started
    assert result.returncode == 4, result.stderr
    assert took < 6, took
    assert server.requests[0].chunks_sent < server.requests[0].chunks_total
    reply, stop = log_of(tmp_path, "slow")[-2:]
    assert reply["content"].endswith("[cut at the time limit]")
    assert reply["metadata"]["usage_counted"] in ("tokenizer", "estimate")  # billed: counted
    assert stop["metadata"] == {"ending": "time-limit", "limit": "time-limit"}


def test_the_time_limit_cuts_a_server_that_sends_nothing(fencecall: CLI, tmp_path: Path) -> None:
    silent = Reply("words that come too late", latency=30)  # no byte for thirty seconds
    with FakeModelServer([silent]) as server:
        started = time.monotonic()
        result = fencecall("--model", "local/m", "--name", "silent", "--time-limit", "2",
                           "talk", base_url=server.openai_url)
        took = time.monotonic() - started
    assert result.returncode == 4, result.stderr
    assert took < 5, took  # the limit and the start, not the server's thirty seconds
    reply, stop = log_of(tmp_path, "silent")[-2:]
    assert reply["content"] == "\n[cut at the time limit]"
    assert reply["metadata"]["usage_counted"]  # sent, so billed: its input counted
    assert stop["metadata"] == {"ending": "time-limit", "limit": "time-limit"}


def _first_worst_case(fencecall: CLI, server: FakeModelServer, max_tokens: int) -> int:
    """The first request's worst case as fencecall counts it (its input and
    ``--max-tokens``): a budget of one token refuses it, saying how much it could take."""
    probe = fencecall("--model", "local/m", "--budget-tokens", "1", "--max-tokens",
                      str(max_tokens), "write the report", base_url=server.openai_url)
    found = re.search(r"could\s+take\s+([\d,]+)\s+tokens", probe.stdout)
    assert probe.returncode == 3 and found is not None, probe.stdout
    return int(found[1].replace(",", ""))


@pytest.mark.parametrize("bogus", [-1_000_000, None, "many"], ids=["negative", "null", "string"])
def test_bogus_usage_lets_only_the_requests_the_budget_allows(
        fencecall: CLI, tmp_path: Path, bogus: object) -> None:
    # each reply is cut at the token limit and says it took 1,000 tokens, but for the bogus
    # count; the budget has room for one such reply, not for two
    replies = [Reply(".", finish="length", usage=(10, 1_000),
                     usage_extra={"completion_tokens": bogus}) for _ in range(8)]
    with FakeModelServer(replies) as server:
        budget = _first_worst_case(fencecall, server, 1_200) + 600
        result = fencecall("--model", "local/m", "--name", "u", "--budget-tokens",
                           str(budget), "--max-tokens", "1200", "write the report",
                           base_url=server.openai_url)
    assert result.returncode == 3, result.stderr
    assert len(server.requests) == 1
    assert "Stopped by the token budget" in result.stdout
    reply = next(r for r in log_of(tmp_path, "u") if r["role"] == "assistant")
    assert reply["metadata"]["usage_counted"] == "estimate"  # fencecall's own count


def test_a_server_that_ignores_max_tokens_is_cut_there_and_the_run_ends_at_its_budget(
        fencecall: CLI, tmp_path: Path) -> None:
    huge = " ".join(f"w{i}" for i in range(60_000))[:400_000]  # never repeats
    with FakeModelServer(respond=lambda body: Reply(huge, chunk_size=50)) as server:
        result = fencecall("--model", "local/m", "--name", "big", "--max-tokens", "200",
                           "--budget-tokens", "5000", "write the report",
                           base_url=server.openai_url)
        for _ in range(250):  # the server sees the client leave
            if all(r.disconnected for r in server.requests):
                break
            time.sleep(0.02)
    assert result.returncode == 3, result.stderr
    assert "Stopped by the token budget" in result.stdout
    assert server.requests and all(r.disconnected and r.chunks_sent < r.chunks_total
                                   for r in server.requests)
    log = log_of(tmp_path, "big")
    replies = [r for r in log if r["role"] == "assistant"]
    assert len(replies) == len(server.requests)
    for reply in replies:  # what was read of each: up to max_tokens, 8 bytes a token at most
        assert len(reply["content"]) <= 8 * 200 + 50 and reply["metadata"]["cut"]
    told = [r["content"] for r in log if r.get("metadata", {}).get("cut") is True]
    assert told and "cut off at the output token limit (200 tokens)" in told[0]
    assert log[-1]["metadata"] == {"ending": "budget", "limit": "budget-tokens"}
    spent = sum(sum(r["metadata"]["usage"].values()) for r in replies)
    assert spent <= 5000
