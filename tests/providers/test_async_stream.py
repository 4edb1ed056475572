"""``astream`` gives what ``stream`` gives, read from a real server over real sockets: the
same events in the same order, the same errors, and closing it drops the connection."""

from __future__ import annotations

import asyncio
import itertools
import threading
import time
from collections.abc import Callable, Coroutine, Generator, Iterator
from typing import Any, TypeAlias

import pytest

from fencecall.message import Message
from fencecall.providers import (
    ChatRequest,
    ProviderError,
    ScriptedProvider,
    ScriptedReply,
    StreamBroken,
    has_astream,
)
from fencecall.providers._anthropic_provider import AnthropicProvider
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.providers.base import NativeCall, StreamEnd, StreamEvent, TextDelta
from tests.fakeserver import FakeModelServer, Reply, Served

HttpProvider: TypeAlias = OpenAIProvider | AnthropicProvider
CALL = {"id": "c1", "name": "add", "arguments": {"a": 1, "b": 2}}


class PromptServer:
    """A fake model server shared by a module's tests (a server takes half a second to shut
    down): each test asks with prompts of its own, and each prompt gets its own replies, in
    order, whatever other requests come meanwhile. ``arrived`` has when each request came."""

    def __init__(self) -> None:
        self._replies: dict[str, list[Reply]] = {}
        self.arrived: dict[str, list[float]] = {}
        self._lock = threading.Lock()
        self._names = itertools.count()
        self.fake = FakeModelServer(respond=self._respond, keep_alive=True)

    def ask(self, *replies: Reply) -> ChatRequest:
        """A request with a new prompt, which the server answers with ``replies``."""
        prompt = f"prompt {next(self._names)}"
        with self._lock:
            self._replies[prompt] = list(replies)
            self.arrived[prompt] = []
        return ChatRequest("m", "be brief", (Message("user", prompt),))

    def served(self, request: ChatRequest) -> list[Served]:
        return [s for s in self.fake.requests if _prompt(s.body) == request.messages[-1].content]

    def _respond(self, body: dict[str, Any]) -> Reply:
        prompt = _prompt(body)
        with self._lock:
            self.arrived[prompt].append(time.monotonic())
            return self._replies[prompt].pop(0)


def _prompt(body: dict[str, Any]) -> str:
    content = body["messages"][-1]["content"]
    return content if isinstance(content, str) else str(content[-1]["text"])


@pytest.fixture(scope="module")
def server() -> Iterator[PromptServer]:
    prompts = PromptServer()
    with prompts.fake:
        yield prompts


def _openai(server: PromptServer) -> HttpProvider:
    return OpenAIProvider(api_key=None, base_url=server.fake.openai_url, max_retries=0)


def _anthropic(server: PromptServer) -> HttpProvider:
    return AnthropicProvider(api_key=None, base_url=server.fake.base_url, max_retries=0)


VENDORS = pytest.mark.parametrize("make", [_openai, _anthropic], ids=["openai", "anthropic"])
Make = Callable[[PromptServer], HttpProvider]


def run(scenario: Coroutine[Any, Any, Any]) -> Any:
    return asyncio.run(asyncio.wait_for(scenario, 20))


async def collect(provider: HttpProvider, request: ChatRequest) -> list[StreamEvent]:
    try:
        return [event async for event in provider.astream(request)]
    finally:
        await provider.aclose()


def outcome(read: Callable[[], list[StreamEvent]]) -> list[StreamEvent] | ProviderError:
    """What reading a stream ends in: its events, or the error it raised."""
    try:
        return read()
    except ProviderError as err:
        return err


async def eventually(done: Callable[[], bool], timeout: float = 5.0) -> None:
    deadline = time.monotonic() + timeout
    while not done():
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


@VENDORS
@pytest.mark.parametrize("reply", [
    Reply("Hello there.", chunk_size=4, usage=(100, 7)),
    Reply("Adding.", tool_calls=[CALL, {**CALL, "id": "c2", "arguments": {}}]),
    Reply("Cut sh", finish="length"),
    Reply("", tool_calls=[CALL], chunk_size=3),
], ids=["text", "calls", "cut", "only-a-call"])
def test_astream_yields_what_stream_yields(server: PromptServer, make: Make,
                                           reply: Reply) -> None:
    provider = make(server)
    request = server.ask(reply, reply)
    expected = list(provider.stream(request))
    events = run(collect(provider, request))
    assert events == expected
    assert any(isinstance(event, NativeCall) for event in events) == bool(reply.tool_calls)
    end = events[-1]
    assert isinstance(end, StreamEnd) and end.cut == (reply.finish == "length")


@VENDORS
@pytest.mark.parametrize("reply", [Reply("Hello there.", cut_after=3),
                                   Reply("Hello there.", garbage=True)], ids=["cut", "garbage"])
def test_a_broken_stream_ends_as_it_does_in_stream(server: PromptServer, make: Make,
                                                   reply: Reply) -> None:
    provider = make(server)
    request = server.ask(reply, reply)
    expected = outcome(lambda: list(provider.stream(request)))
    found = outcome(lambda: run(collect(provider, request)))
    if reply.garbage and make is _anthropic:  # its SDK skips an event with no event name
        assert found == expected
    else:
        assert isinstance(expected, StreamBroken) and isinstance(found, StreamBroken)
        assert str(found) == str(expected)


@VENDORS
def test_a_refused_request_is_a_provider_error_not_a_broken_stream(server: PromptServer,
                                                                   make: Make) -> None:
    provider = make(server)
    request = server.ask(Reply(status=400), Reply(status=400))
    expected = outcome(lambda: list(provider.stream(request)))
    found = outcome(lambda: run(collect(provider, request)))
    assert isinstance(found, ProviderError) and not isinstance(found, StreamBroken)
    assert str(found) == str(expected)
    assert str(found).startswith(f"{provider.name} ({provider.url}): ")
    assert len(server.served(request)) == 2  # one each: a 400 is not retried


@VENDORS
def test_aclose_mid_stream_drops_the_connection(server: PromptServer, make: Make) -> None:
    provider = make(server)
    request = server.ask(Reply("x" * 400, chunk_size=2, delay=0.02))

    async def scenario() -> Served:
        stream = provider.astream(request)
        got = [await anext(stream) for _ in range(3)]
        assert all(isinstance(event, TextDelta) for event in got)
        await stream.aclose()
        assert provider.gate.stats().in_flight == 0
        [served] = server.served(request)
        await eventually(lambda: served.disconnected)
        await provider.aclose()
        return served

    served = run(scenario())
    assert served.chunks_sent < served.chunks_total / 2


@VENDORS
def test_each_event_loop_gets_its_own_connections(server: PromptServer, make: Make) -> None:
    """A batch may run each time on a new loop: the kept-alive connections of a loop that
    has ended are not used on the next."""
    provider = make(server)
    request = server.ask(Reply("one"), Reply("two"))

    async def first_event() -> StreamEvent:  # no aclose: the loop ends with its connection
        events = [event async for event in provider.astream(request)]
        return events[0]

    assert [asyncio.run(first_event()) for _ in range(2)] == [TextDelta("one"), TextDelta("two")]


def test_the_scripted_provider_replays_on_the_loop_as_it_does_off_it() -> None:
    script = [ScriptedReply("Hello there.", chunk_size=5, calls=(NativeCall("c", "add", "{}"),)),
              ScriptedReply("cut", stop_reason="length")]
    expected = list(ScriptedProvider(script).stream(ChatRequest("m", "", ())))
    provider = ScriptedProvider(script)
    request = ChatRequest("m", "", ())

    async def scenario() -> tuple[list[StreamEvent], list[str]]:
        order: list[str] = []

        async def other() -> None:
            for _ in range(3):
                order.append("other")
                await asyncio.sleep(0)

        async def read() -> list[StreamEvent]:
            events = []
            async for event in provider.astream(request):
                order.append("event")
                events.append(event)
            return events

        events, _ = await asyncio.gather(read(), other())
        second = provider.astream(request)
        await anext(second)
        await second.aclose()
        return events, order

    events, order = run(scenario())
    assert events == expected
    assert order[:4] == ["other", "event", "other", "event"]  # it lets the loop run
    assert provider.requests == [request, request]
    assert provider.delivered == [len(expected), 1]


def test_the_scripted_provider_with_nothing_left_refuses() -> None:
    async def scenario() -> None:
        async for _ in ScriptedProvider([]).astream(ChatRequest("m", "", ())):
            pass

    with pytest.raises(ProviderError, match="no scripted reply left for request 1"):
        run(scenario())


def test_has_astream() -> None:
    class SyncOnly:
        def __init__(self) -> None:
            self.name = "sync"
            self.url: str | None = None

        def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]:
            yield StreamEnd("stop")

    assert has_astream(ScriptedProvider([]))
    assert has_astream(OpenAIProvider(api_key=None, base_url="http://127.0.0.1:9/v1"))
    assert not has_astream(SyncOnly())
