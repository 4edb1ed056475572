"""The token counters: OpenAI's BPE, a server's tokenizer, and the estimate that errs high."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fencecall.accounting import BpeCounter, Estimate, ServerCounter, counter_for
from fencecall.accounting.tokens import server_root

from ..fakeserver import FakeModelServer, dense_tokens

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
