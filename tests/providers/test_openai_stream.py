"""The OpenAI provider reads a real stream from the fake server: text, native calls, usage."""

from __future__ import annotations

from fencecall.message import Message, Usage
from fencecall.providers import ChatRequest
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.providers.base import NativeCall, StreamEnd, TextDelta
from tests.fakeserver import FakeModelServer, Reply


def _events(reply: Reply) -> list[object]:
    with FakeModelServer([reply]) as server:
        provider = OpenAIProvider(api_key=None, base_url=server.openai_url, max_retries=0)
        return list(provider.stream(ChatRequest("m", "be brief", (Message("user", "hi"),))))


def test_text_calls_and_cached_tokens_are_read_from_the_stream() -> None:
    events = _events(Reply("Hello there.", chunk_size=4, usage=(100, 7),
                           usage_extra={"prompt_tokens_details": {"cached_tokens": 60}},
                           tool_calls=[{"id": "c1", "name": "add",
                                        "arguments": {"a": 1, "b": 2}}]))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello there."
    assert [e for e in events if isinstance(e, NativeCall)] == [
        NativeCall("c1", "add", '{"a": 1, "b": 2}')]
    assert [e for e in events if isinstance(e, Usage)] == [Usage(40, 7, 60)]
    assert events[-1] == StreamEnd("tool_calls")


def test_usage_a_server_gets_wrong_is_left_out_and_the_reply_stands() -> None:
    events = _events(Reply("Fine.", usage_extra={"prompt_tokens": "many",
                                                  "prompt_tokens_details": None}))
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Fine."
    assert [e for e in events if isinstance(e, Usage)] == []  # fencecall counts it instead
    assert events[-1] == StreamEnd("stop")
