"""The token counters: OpenAI's BPE, Anthropic's counting endpoint, a server's tokenizer, and
the estimate that errs high."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from fencecall.accounting import (
    AnthropicCounter,
    BpeCounter,
    Estimate,
    ServerCounter,
    counter_for,
)
from fencecall.accounting.tokens import server_root

from ..cli.conftest import cli_env, log_of
from ..fakeserver import FakeModelServer, Reply, dense_tokens
from ..ports import free_port
from ..support import F

TEXTS = {
    "prose": "The quick brown fox jumps over the lazy dog, and then it rests. " * 20,
    "code": "def add(a: int, b: int) -> int:\n    return a + b  # sum\n" * 20,
    "json": json.dumps([{"id": i, "name": f"item-{i}", "ok": i % 2 == 0} for i in range(40)]),
    "chinese": "模型的纯文本就是工具调用\uff0c每一次调用都保持人类可读。" * 20,
    "russian": "Простой текст модели и есть вызов инструмента. " * 20,
}


def test_openai_models_are_counted_with_their_own_vocabulary() -> None:
    counter = counter_for("openai", None, "gpt-4o")
    assert isinstance(counter, BpeCounter) and counter.exactness == "tokenizer"
    assert counter.count("hello world") == 2
    assert not BpeCounter.knows("qwen2.5-coder")


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_the_estimate_errs_high_on_every_kind_of_text(kind: str) -> None:
    text = TEXTS[kind]
    assert Estimate().count(text) >= BpeCounter("gpt-4o").count(text)


def test_a_self_hosted_server_counts_with_its_own_tokenizer() -> None:
    with FakeModelServer(tokenizer=dense_tokens) as server:
        counter = counter_for("openai", server.openai_url, "m")
        assert isinstance(counter, ServerCounter)
        text = TEXTS["json"]
        assert counter.count(text) == len(dense_tokens(text))
        assert counter.count(text) == len(dense_tokens(text))  # asked once, then remembered
        assert server.tokenize_calls == 1 and counter.exactness == "tokenizer"
        assert server.requests == []  # counting is no chat request


def test_llama_cpp_python_s_endpoint_and_a_server_without_one() -> None:
    asked: list[str] = []

    def post(url: str, body: dict[str, Any], timeout: float) -> Any:
        asked.append(url)
        if url.endswith("/extras/tokenize"):
            return {"tokens": [1, 2, 3]}
        raise OSError("404")

    counter = ServerCounter("http://h:1", "m", post=post)
    assert counter.count("abc") == 3
    assert asked == ["http://h:1/tokenize", "http://h:1/tokenize", "http://h:1/extras/tokenize"]
    assert counter.count("abcd") == 3 and asked[-1].endswith("/extras/tokenize")

    def refuse(url: str, body: dict[str, Any], timeout: float) -> Any:
        raise OSError("refused")

    none = ServerCounter("http://h:1", "m", post=refuse)
    assert none.count("a" * 10) == Estimate().count("a" * 10)
    assert none.exactness == "estimate"
    assert server_root("http://h:1/v1/") == "http://h:1"


def _claude(server: FakeModelServer) -> AnthropicCounter:
    counter = counter_for("anthropic", server.base_url, "claude-test", "claude-secret")
    assert isinstance(counter, AnthropicCounter)
    return counter


@pytest.mark.parametrize("kind", sorted(TEXTS))
def test_anthropic_models_are_counted_by_anthropic_s_endpoint(kind: str) -> None:
    text = TEXTS[kind]
    with FakeModelServer(tokenizer=dense_tokens, template_tokens=40) as server:
        counter = _claude(server)
        assert counter.count(text) == len(dense_tokens(text))  # the wrapping taken off
        assert counter.exactness == "tokenizer"
    probe, asked = server.count_requests
    assert probe.body == {"model": "claude-test",
                          "messages": [{"role": "user", "content": AnthropicCounter.PROBE}]}
    assert asked.path == "/v1/messages/count_tokens"
    assert asked.body["messages"] == [{"role": "user", "content": text}]
    key = asked.headers.get("x-api-key", asked.headers.get("authorization", ""))
    assert "claude-secret" in key and "anthropic-version" in asked.headers
    assert server.requests == []  # counting is no chat request


def test_anthropic_counts_are_asked_once_per_text_and_never_for_blank_ones() -> None:
    with FakeModelServer(tokenizer=dense_tokens) as server:
        counter = _claude(server)
        text = TEXTS["code"]
        assert counter.count(text) == counter.count(text) == len(dense_tokens(text))
        assert len(server.count_requests) == 2  # the wrapping's probe, then the text once
        assert counter.count("") == 0  # refused by the API, so never sent
        assert counter.count(" \n ") == Estimate().count(" \n ")
        assert counter.count("ok") == 1 and len(server.count_requests) == 3
        assert counter.exactness == "tokenizer"


def test_a_failing_counting_endpoint_leaves_the_estimate_for_good() -> None:
    with FakeModelServer(tokenizer=dense_tokens) as server:
        counter = _claude(server)
        assert counter.count("first words") == len(dense_tokens("first words"))
        server.count_status = 500
        text = TEXTS["prose"]
        assert counter.count(text) == Estimate().count(text)
        assert counter.exactness == "estimate"
        server.count_status = 200
        assert counter.count("first words") == Estimate().count("first words")
        assert len(server.count_requests) == 3  # nothing asked once it failed
    with FakeModelServer() as server:  # no tokenizer: its endpoint answers 404
        counter = _claude(server)
        assert counter.count("abc") == Estimate().count("abc")
        assert counter.exactness == "estimate"


def test_an_anthropic_endpoint_that_does_not_answer_leaves_the_estimate() -> None:
    closed = AnthropicCounter("m", "key", f"http://127.0.0.1:{free_port()}")
    assert closed.count("abc") == Estimate().count("abc") and closed.exactness == "estimate"
    with socket.socket() as silent:  # accepts connections, never answers
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        host, port = silent.getsockname()
        slow = AnthropicCounter("m", "key", f"http://{host}:{port}", timeout=0.5)
        started = time.monotonic()
        assert slow.count("abc") == Estimate().count("abc") and slow.exactness == "estimate"
        assert time.monotonic() - started < 5


def test_anthropic_models_without_a_key_get_the_estimate() -> None:
    assert isinstance(counter_for("anthropic", None, "claude-test"), Estimate)
    assert isinstance(counter_for("anthropic", "http://127.0.0.1:9", "claude-test", ""),
                      Estimate)


def test_a_claude_run_counts_its_cut_replies_with_anthropic_s_endpoint(
        tmp_path: Path, workspace: Path) -> None:
    replies = [Reply(f"Step {i}.\n{F}shell\necho {i}\n{F}\nThen more.")
               for i in range(2)] + [Reply("Done.")]
    with FakeModelServer(replies, tokenizer=dense_tokens) as server:
        config = tmp_path / "config" / "fencecall" / "config.toml"  # where cli_env points
        config.parent.mkdir(parents=True)
        config.write_text(f'[providers.claude]\nkind = "anthropic"\n'
                          f'base_url = "{server.base_url}"\napi_key_env = "CLAUDE_KEY"\n')
        result = subprocess.run(
            [sys.executable, "-m", "fencecall.cli.main", "-y", "--model", "claude/claude-test",
             "--name", "c", "go", "--workspace", str(workspace)],
            env=cli_env(tmp_path, server.openai_url, CLAUDE_KEY="claude-secret"),
            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    replies_logged = [m for m in log_of(tmp_path, "c") if m["role"] == "assistant"]
    cut = [m["metadata"] for m in replies_logged if "usage_counted" in m["metadata"]]
    assert [m["usage_counted"] for m in cut] == ["tokenizer", "tokenizer"]
    billed = [r.input_tokens for r in server.requests[:2]]
    for counted, theirs in zip([m["usage"]["input_tokens"] for m in cut], billed, strict=True):
        assert abs(counted - theirs) <= theirs * 0.02, (counted, billed)
    assert server.count_requests
    chat, asked = server.requests[0], server.count_requests[0]
    assert {r.body["model"] for r in server.count_requests} == {"claude-test"}
    for header in ("x-api-key", "authorization", "anthropic-version"):
        assert asked.headers.get(header) == chat.headers.get(header)
