"""A provider's gate on a real server: it bounds the requests open at once, retries what can
be retried, pauses the whole provider when the server asks, and cancels cleanly."""

from __future__ import annotations

import asyncio
import socket
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from fencecall.providers import ChatRequest, Gate, GateStats, ProviderError, StreamBroken
from fencecall.providers._anthropic_provider import AnthropicProvider
from fencecall.providers._gate import Failure, retry_after
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.providers.base import StreamEvent, TextDelta
from tests.fakeserver import FakeModelServer, Reply

from .test_async_stream import PromptServer, eventually, run

SLOW = 0.25
"""Seconds the server takes to answer a slow request."""


@pytest.fixture(scope="module")
def server() -> Iterator[PromptServer]:
    prompts = PromptServer()
    with prompts.fake:
        yield prompts


def _provider(server: PromptServer, *, limit: int = 8, retries: int = 2,
              backoff: float = 0.05) -> OpenAIProvider:
    provider = OpenAIProvider(api_key=None, base_url=server.fake.openai_url,
                              max_retries=retries, max_connections=limit)
    provider.gate = Gate(provider.name, limit=limit, retries=retries, backoff=backoff)
    return provider


async def _read(provider: OpenAIProvider | AnthropicProvider,
                request: ChatRequest) -> list[StreamEvent]:
    return [event async for event in provider.astream(request)]


def _text(events: list[StreamEvent]) -> str:
    return "".join(event.text for event in events if isinstance(event, TextDelta))


def test_no_more_than_the_limit_are_open_at_once(server: PromptServer) -> None:
    provider = _provider(server, limit=2)
    requests = [server.ask(Reply(f"reply {i}", latency=SLOW)) for i in range(6)]
    seen: list[GateStats] = []

    async def watch() -> None:
        while True:
            seen.append(provider.gate.stats())
            await asyncio.sleep(0.005)

    async def scenario() -> list[list[StreamEvent]]:
        watcher = asyncio.create_task(watch())
        try:
            return list(await asyncio.gather(*(_read(provider, r) for r in requests)))
        finally:
            watcher.cancel()
            await provider.aclose()

    replies = run(scenario())
    assert [_text(events) for events in replies] == [f"reply {i}" for i in range(6)]
    assert max(s.in_flight for s in seen) == 2
    assert max(s.waiting for s in seen) == 4
    assert provider.gate.stats() == GateStats(0, 0, 0, 0.0)
    arrived = sorted(server.arrived[r.messages[-1].content][0] for r in requests)
    # a third request reaches the server only once one of the two before it has finished
    assert all(arrived[i + 2] - arrived[i] >= SLOW * 0.9 for i in range(len(arrived) - 2))


def test_a_retry_after_pauses_every_request_of_the_provider(server: PromptServer) -> None:
    provider = _provider(server)
    streaming = server.ask(Reply("still streaming " * 4, chunk_size=4, delay=0.03))
    limited = server.ask(Reply(status=429, retry_after="1"), Reply("after the pause"))
    later = [server.ask(Reply(f"later {i}")) for i in range(2)]

    async def scenario() -> tuple[list[list[StreamEvent]], float]:
        open_stream = asyncio.create_task(_read(provider, streaming))
        first = asyncio.create_task(_read(provider, limited))
        await eventually(lambda: provider.gate.stats().paused_for > 0)
        others = [asyncio.create_task(_read(provider, r)) for r in later]
        await eventually(lambda: provider.gate.stats().waiting == 3)  # 429'd and the later
        assert provider.gate.stats().retries == 1
        await open_stream  # it goes on during the pause
        streamed_by = time.monotonic()
        replies = await asyncio.gather(first, *others)
        await provider.aclose()
        return replies, streamed_by

    replies, streamed_by = run(scenario())
    assert [_text(events) for events in replies] == ["after the pause", "later 0", "later 1"]
    refused, retried = server.arrived[limited.messages[-1].content]
    assert streamed_by < refused + 1
    assert retried - refused >= 0.95
    for request in later:
        assert server.arrived[request.messages[-1].content][0] - refused >= 0.95
    assert provider.gate.stats() == GateStats(0, 0, 1, 0.0)


def test_server_errors_are_retried_after_a_backoff(server: PromptServer) -> None:
    provider = _provider(server, backoff=0.05)
    request = server.ask(Reply(status=500), Reply(status=503), Reply("third time"))
    assert _text(run(_read(provider, request))) == "third time"
    first, second, third = server.arrived[request.messages[-1].content]
    assert second - first >= 0.05 and third - second >= 0.1
    assert provider.gate.stats().retries == 2


def test_when_retries_run_out_the_error_names_the_status(server: PromptServer) -> None:
    provider = _provider(server, retries=1, backoff=0.01)
    request = server.ask(Reply(status=502), Reply(status=502))
    with pytest.raises(ProviderError, match=r"HTTP 502; gave up after 1 retry") as raised:
        run(_read(provider, request))
    assert not isinstance(raised.value, StreamBroken)  # refused, nothing billed
    assert str(raised.value).startswith(f"openai ({provider.url}): ")


def test_a_refused_request_is_not_retried(server: PromptServer) -> None:
    provider = _provider(server)
    request = server.ask(Reply(status=400), Reply("never sent"))
    with pytest.raises(ProviderError, match="fake error 400") as raised:
        run(_read(provider, request))
    assert not isinstance(raised.value, StreamBroken)
    assert len(server.arrived[request.messages[-1].content]) == 1
    assert provider.gate.stats().retries == 0


def test_an_absurd_retry_after_is_capped_and_the_error_says_so(server: PromptServer) -> None:
    provider = AnthropicProvider(api_key=None, base_url=server.fake.base_url, max_retries=0)
    request = server.ask(Reply(status=429, retry_after="3600"))
    with pytest.raises(ProviderError, match=r"HTTP 429; not retried .*pause of 3600 s, "
                                            r"paused 60 s \(the cap\)"):
        run(_read(provider, request))
    assert 55 < provider.gate.stats().paused_for <= 60


def test_no_answer_at_all_is_retried_then_reported() -> None:
    with socket.socket() as unused:
        unused.bind(("127.0.0.1", 0))
        port = unused.getsockname()[1]
    provider = OpenAIProvider(api_key=None, base_url=f"http://127.0.0.1:{port}/v1")
    provider.gate = Gate(provider.name, retries=2, backoff=0.01)
    with pytest.raises(ProviderError, match="no answer from the server; gave up after 2 "):
        run(_read(provider, ChatRequest("m", "", ())))
    assert provider.gate.stats() == GateStats(0, 0, 2, 0.0)


def test_a_cancelled_waiter_gives_back_its_place(server: PromptServer) -> None:
    provider = _provider(server, limit=1)
    holding = server.ask(Reply("x" * 200, chunk_size=2, delay=0.01))
    cancelled = server.ask(Reply("never sent"))
    after = server.ask(Reply("got the slot"))

    async def scenario() -> list[StreamEvent]:
        stream = provider.astream(holding)
        await anext(stream)
        waiter = asyncio.create_task(_read(provider, cancelled))
        await eventually(lambda: provider.gate.stats().waiting == 1)
        waiter.cancel()
        with pytest.raises(asyncio.CancelledError):
            await waiter
        assert provider.gate.stats() == GateStats(1, 0, 0, 0.0)
        await stream.aclose()
        assert provider.gate.stats() == GateStats(0, 0, 0, 0.0)
        events = await asyncio.wait_for(_read(provider, after), 2)
        await provider.aclose()
        return events

    assert _text(run(scenario())) == "got the slot"
    assert server.arrived[cancelled.messages[-1].content] == []


def test_a_request_cancelled_before_its_answer_gives_back_its_slot(
        server: PromptServer) -> None:
    provider = _provider(server, limit=1)
    unanswered = server.ask(Reply("too late", latency=SLOW))
    after = server.ask(Reply("next"))

    async def scenario() -> list[StreamEvent]:
        task = asyncio.create_task(_read(provider, unanswered))
        await eventually(lambda: bool(server.arrived[unanswered.messages[-1].content]))
        assert provider.gate.stats().in_flight == 1
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert provider.gate.stats() == GateStats(0, 0, 0, 0.0)
        events = await asyncio.wait_for(_read(provider, after), 2)
        await provider.aclose()
        return events

    assert _text(run(scenario())) == "next"


class _Refused(Exception):
    def __init__(self, failure: Failure):
        super().__init__(f"refused ({failure.status})")
        self.failure = failure


def _classify(err: Exception) -> Failure | None:
    return err.failure if isinstance(err, _Refused) else None


def test_cancelling_during_a_pause_or_a_backoff_leaves_nothing_held() -> None:
    """The gate alone, with requests that are always refused: one backs off, another pauses
    the gate; both waits are cancelled and nothing stays held."""
    gate = Gate("g", limit=1, retries=5, backoff=30)

    async def send(failure: Failure) -> None:
        raise _Refused(failure)

    async def ask(failure: Failure) -> None:
        async with gate.request(lambda: send(failure), "g", _classify):
            pass

    async def scenario() -> None:
        for failure in (Failure(500), Failure(429, retry_after=30)):
            task = asyncio.create_task(ask(failure))
            await eventually(lambda: gate.stats().waiting == 1)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert gate.stats().in_flight == 0 and gate.stats().waiting == 0
        assert gate.stats().retries == 2 and gate.stats().paused_for > 25

    run(scenario())


def test_two_providers_do_not_wait_for_each_other(server: PromptServer) -> None:
    paused = _provider(server)
    with FakeModelServer([Reply("not held up")]) as other_server:
        other = AnthropicProvider(api_key=None, base_url=other_server.base_url)
        request = server.ask(Reply(status=429, retry_after="5"))

        async def scenario() -> list[StreamEvent]:
            waiting = asyncio.create_task(_read(paused, request))
            await eventually(lambda: paused.gate.stats().paused_for > 0)
            started = time.monotonic()
            events = await _read(other, ChatRequest("m", "", ()))
            assert time.monotonic() - started < 1
            assert paused.gate.stats().waiting == 1 and other.gate.stats().paused_for == 0
            waiting.cancel()
            with pytest.raises(asyncio.CancelledError):
                await waiting
            await paused.aclose()
            await other.aclose()
            return events

        assert _text(run(scenario())) == "not held up"


def test_a_gate_works_on_one_loop_after_another() -> None:
    gate = Gate("g", limit=1)

    async def once() -> GateStats:
        async def send() -> GateStats:
            return gate.stats()

        async with gate.request(send, "g", _classify) as inside:
            return inside

    assert [asyncio.run(once()) for _ in range(2)] == [GateStats(1, 0, 0, 0.0)] * 2


@pytest.mark.parametrize(("headers", "seconds"), [
    ({"retry-after": "2"}, 2.0),
    ({"retry-after": "0.5", "retry-after-ms": "1500"}, 1.5),
    ({"retry-after": "soon"}, None),
    ({"retry-after": "-1"}, None),
    ({"retry-after": "nan"}, None),
    ({}, None),
])
def test_retry_after_reads_seconds_milliseconds_and_dates(headers: dict[str, str],
                                                         seconds: float | None) -> None:
    found = retry_after(headers)
    if seconds is None:
        assert found is None
    else:
        assert found == pytest.approx(seconds, abs=1.5)


@pytest.mark.parametrize(("ahead", "seconds"), [(30, 30.0), (-30, 0.0)])
def test_retry_after_reads_an_http_date(ahead: float, seconds: float) -> None:
    date = format_datetime(datetime.now(UTC) + timedelta(seconds=ahead), usegmt=True)
    assert retry_after({"retry-after": date}) == pytest.approx(seconds, abs=1.5)
