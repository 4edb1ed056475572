"""Anthropic prompt caching, on the wire: which blocks of a request carry ``cache_control``."""

from __future__ import annotations

import json
from typing import Any

import pytest

from fencecall.message import Message, NativeCallRecord, ReplyRecord
from fencecall.providers._anthropic_provider import AnthropicProvider
from fencecall.providers.base import ChatRequest

from ..fakeserver import FakeModelServer, Reply
from ..sample_tools import ADD

EPHEMERAL = {"type": "ephemeral"}
SYSTEM = "You are a careful assistant."
CALL = {"id": "toolu_1", "name": "add", "arguments": {"a": 1, "b": 2}}
TASK = Message("user", "What is 1 + 2?")
ADDING = NativeCallRecord("toolu_1", "add", {"a": 1, "b": 2})
ANSWER = Message("assistant", "Adding.",
                 reply=ReplyRecord("claude-test", "anthropic", native_calls=(ADDING,)))
RESULT = Message("system", "3", call_id="toolu_1", tool="add")


def _sent(*requests: ChatRequest, replies: list[Reply] | None = None) -> list[dict[str, Any]]:
    """The JSON bodies the provider sent for ``requests``, as the server received them."""
    with FakeModelServer(replies or [Reply("ok") for _ in requests]) as server:
        provider = AnthropicProvider(api_key="k", base_url=server.base_url, max_retries=0)
        for request in requests:
            list(provider.stream(request))
    return [served.body for served in server.requests]


def _request(*messages: Message, system: str = SYSTEM) -> ChatRequest:
    return ChatRequest("claude-test", system, messages, tools=(ADD.function_schema("tool"),))


def _markers(value: Any) -> int:
    """How many ``cache_control`` breakpoints a JSON value holds, at any depth."""
    if isinstance(value, dict):
        return ("cache_control" in value) + sum(_markers(v) for v in value.values())
    if isinstance(value, list):
        return sum(_markers(v) for v in value)
    return 0


def test_the_system_prompt_is_one_cached_text_block() -> None:
    [body] = _sent(_request(TASK))
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": EPHEMERAL}]


def test_the_last_block_of_the_last_message_carries_the_breakpoint() -> None:
    [body] = _sent(_request(TASK, ANSWER, RESULT))
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "What is 1 + 2?"}]},
        {"role": "assistant", "content": [
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                      "content": "3", "cache_control": EPHEMERAL}]},
    ]


def test_a_second_request_reads_the_first_as_its_cached_prefix() -> None:
    """The marker moves: the first request marks its last block (the task); the second, which
    repeats the first's messages and adds the reply and its result, marks its own last block
    (the result) and drops the marker on the task. The marker is no part of the cached bytes,
    so up to the task the second request is the first byte for byte (JSON dumped in the order
    received), and the API finds the first's cache entry by looking back from the new marker."""
    first, second = _sent(_request(TASK), _request(TASK, ANSWER, RESULT),
                          replies=[Reply("Adding.", tool_calls=[CALL]), Reply("3.")])
    assert second["system"] == first["system"] and second["tools"] == first["tools"]
    assert first["messages"][-1]["content"][-1].pop("cache_control") == EPHEMERAL
    assert second["messages"][-1]["content"][-1]["cache_control"] == EPHEMERAL
    prefix = second["messages"][: len(first["messages"])]
    assert json.dumps(prefix) == json.dumps(first["messages"])
    assert _markers(second["messages"]) == 1


def test_a_long_conversation_stays_within_four_breakpoints() -> None:
    turns = [TASK, ANSWER, RESULT] + [message for i in range(10) for message in (
        Message("assistant", f"reply {i}"), Message("user", f"turn {i}"))]
    [body] = _sent(_request(*turns))
    assert _markers(body) == 2  # the system prompt and the latest turn: 4 at most are allowed
    assert _markers(body["tools"]) == 0  # the system block's prefix holds the tools
    assert body["messages"][-1]["content"] == [
        {"type": "text", "text": "turn 9", "cache_control": EPHEMERAL}]


@pytest.mark.parametrize("blank", ["", " \n"])
def test_a_blank_system_prompt_sends_no_system_field(blank: str) -> None:
    [body] = _sent(_request(TASK, system=blank))
    assert "system" not in body  # the API refuses an empty text block
    assert _markers(body) == 1
