"""A server's word is checked, on ``stream`` and ``astream`` alike: usage that cannot be true
is left out (fencecall counts the reply itself), and a reply that runs past ``max_tokens`` or
past what the budget leaves is cut there and its stream closed, whatever the server sends."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from fencecall.message import Message, Usage
from fencecall.providers import ChatRequest
from fencecall.providers._anthropic_provider import AnthropicProvider
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.providers.base import StreamEnd, StreamEvent, TextDelta
from tests.fakeserver import FakeModelServer, Reply, Served

HUGE = " ".join(f"w{i}" for i in range(60_000))[:400_000]
"""400,000 characters that never repeat (so no loop guard stops them first)."""
Provider = OpenAIProvider | AnthropicProvider


class Prompts:
    """One fake server for the module: each request's prompt picks its reply."""

    def __init__(self) -> None:
        self.replies: dict[str, Reply] = {}
        self.fake = FakeModelServer(respond=self._respond)

    def ask(self, reply: Reply, **fields: Any) -> ChatRequest:
        prompt = f"<prompt {len(self.replies)}>"
        self.replies[prompt] = reply
        return ChatRequest("m", "be brief", (Message("user", prompt),), **fields)

    def served(self, request: ChatRequest) -> Served:
        prompt = request.messages[-1].content
        [served] = [s for s in self.fake.requests if prompt in str(s.body["messages"][-1])]
        return served

    def _respond(self, body: dict[str, Any]) -> Reply:
        return next(reply for prompt, reply in self.replies.items()
                    if prompt in str(body["messages"][-1]["content"]))


@pytest.fixture(scope="module")
def prompts() -> Iterator[Prompts]:
    server = Prompts()
    with server.fake:
        yield server


def _openai(prompts: Prompts) -> Provider:
    return OpenAIProvider(api_key=None, base_url=prompts.fake.openai_url, max_retries=0)


def _anthropic(prompts: Prompts) -> Provider:
    return AnthropicProvider(api_key=None, base_url=prompts.fake.base_url, max_retries=0)


def _sync(provider: Provider, request: ChatRequest) -> list[StreamEvent]:
    return list(provider.stream(request))


def _async(provider: Provider, request: ChatRequest) -> list[StreamEvent]:
    async def read() -> list[StreamEvent]:
        try:
            return [event async for event in provider.astream(request)]
        finally:
            await provider.aclose()

    return asyncio.run(asyncio.wait_for(read(), 30))


VENDORS = pytest.mark.parametrize("make", [_openai, _anthropic], ids=["openai", "anthropic"])
PATHS = pytest.mark.parametrize("read", [_sync, _async], ids=["stream", "astream"])
Make = Callable[[Prompts], Provider]
Read = Callable[[Provider, ChatRequest], list[StreamEvent]]


def _text(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def _left(served: Served) -> bool:
    """Whether the client closed the stream before the server had sent all of it."""
    for _ in range(250):
        if served.disconnected:
            break
        time.sleep(0.02)
    return served.disconnected and served.chunks_sent < served.chunks_total


@VENDORS
@PATHS
@pytest.mark.parametrize("bogus", [
    {"out": -1_000_000}, {"out": None}, {"out": "many"}, {"out": 10**12},
    {"in": -5}, {"in": 10**12},
], ids=["negative", "null", "string", "huge", "negative-input", "huge-input"])
def test_usage_that_cannot_be_true_is_left_out(prompts: Prompts, make: Make, read: Read,
                                               bogus: dict[str, object]) -> None:
    openai = make is _openai
    names = (("prompt_tokens", "completion_tokens") if openai
             else ("input_tokens", "output_tokens"))
    extra = {names[0 if key == "in" else 1]: value for key, value in bogus.items()}
    request = prompts.ask(Reply("Fine, and that is all.", usage_extra=extra))
    events = read(make(prompts), request)
    assert _text(events) == "Fine, and that is all."
    assert [event for event in events if isinstance(event, Usage)] == []
    assert events[-1] == StreamEnd("stop" if openai else "end_turn")
    # usage that may be true is kept: as many output tokens as were asked for at most
    request = prompts.ask(Reply("Fine.", usage=(300, 4_000)), max_tokens=4_000)
    events = read(make(prompts), request)
    assert [event for event in events if isinstance(event, Usage)] == [Usage(300, 4_000)]


@VENDORS
@PATHS
def test_a_reply_past_max_tokens_is_cut_and_its_stream_closed(prompts: Prompts, make: Make,
                                                              read: Read) -> None:
    request = prompts.ask(Reply(HUGE, chunk_size=50), max_tokens=200)
    events = read(make(prompts), request)
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.cut
    assert 200 < len(_text(events)) <= 8 * 200 + 50  # a token is never more than 8 bytes
    assert not any(isinstance(event, Usage) for event in events)
    assert _left(prompts.served(request))


@VENDORS
@PATHS
def test_a_reply_past_what_the_budget_leaves_is_cut_there(prompts: Prompts, make: Make,
                                                          read: Read) -> None:
    request = prompts.ask(Reply(HUGE, chunk_size=50), max_tokens=4_096, output_room=100)
    events = read(make(prompts), request)
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.cut
    cut_at_max_tokens = prompts.ask(Reply(HUGE, chunk_size=50), max_tokens=100)
    other = read(make(prompts), cut_at_max_tokens)[-1]
    assert isinstance(other, StreamEnd) and other.cut and other.stop_reason != end.stop_reason
    assert len(_text(events)) <= 2 * 100 + 50  # fencecall's count: half a token a character
    assert _left(prompts.served(request))
