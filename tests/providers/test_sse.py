"""The async path's own reading of chat-completions replies (:mod:`fencecall.providers._sse`):
events split anywhere, errors in the middle of a stream, floods, and kept connections, against
a raw HTTP server that sends exactly the bytes each test gives it."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import socket
import threading
from collections.abc import AsyncIterator, Callable, Iterator

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fencecall.message import Message
from fencecall.providers import ChatRequest, ProviderError, StreamBroken
from fencecall.providers import _sse as sse
from fencecall.providers._openai_provider import OpenAIProvider
from fencecall.providers.base import StreamEnd, StreamEvent, TextDelta

REQUEST = ChatRequest("m", "be brief", (Message("user", "hi"),))


def chunk(text: str = "", finish: str | None = None) -> bytes:
    delta = {"content": text} if text else {}
    return b"data: " + json.dumps({"choices": [{"index": 0, "delta": delta,
                                                "finish_reason": finish}]}).encode() + b"\n\n"


GOOD = chunk("Hello") + chunk(" there.") + chunk(finish="stop") + b"data: [DONE]\n\n"

Answer = Callable[[socket.socket], None]


def chunked(body: bytes, *, end: bool = True) -> bytes:
    head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n")
    return head + b"%x\r\n%s\r\n" % (len(body), body) + (b"0\r\n\r\n" if end else b"")


class RawServer:
    """Answers each request on a connection with the next of ``answers`` (bytes to send, or
    a function given the socket); counts the connections it accepted."""

    def __init__(self, *answers: bytes | Answer):
        self.answers = list(answers)
        self.connections = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self._listener.getsockname()[1]}/v1"
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self._listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn, conn.makefile("rb") as reader:
            while self.answers:
                length = 0
                while (line := reader.readline()) not in (b"\r\n", b""):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                if line == b"":
                    return
                reader.read(length)
                answer = self.answers.pop(0)
                try:
                    conn.sendall(answer) if isinstance(answer, bytes) else answer(conn)
                except OSError:
                    return

    def close(self) -> None:
        self._listener.close()


@pytest.fixture
def serve() -> Iterator[Callable[..., RawServer]]:
    made: list[RawServer] = []

    def start(*answers: bytes | Answer) -> RawServer:
        made.append(RawServer(*answers))
        return made[-1]

    yield start
    for server in made:
        server.close()


def read(server: RawServer, times: int = 1) -> list[list[StreamEvent]]:
    provider = OpenAIProvider(api_key="k", base_url=server.url, max_retries=0)

    async def scenario() -> list[list[StreamEvent]]:
        try:
            return [[event async for event in provider.astream(REQUEST)] for _ in range(times)]
        finally:
            await provider.aclose()

    return asyncio.run(asyncio.wait_for(scenario(), 20))


def test_replies_in_a_row_share_one_kept_connection(serve: Callable[..., RawServer]) -> None:
    server = serve(chunked(GOOD), chunked(GOOD), chunked(GOOD))
    replies = read(server, times=3)
    assert all(events[:2] == [TextDelta("Hello"), TextDelta(" there.")] for events in replies)
    assert all(isinstance(events[-1], StreamEnd) for events in replies)
    assert server.connections == 1


def test_an_error_event_mid_stream_breaks_the_reply_and_says_why(
        serve: Callable[..., RawServer]) -> None:
    error = b'data: {"error": {"message": "the model is overloaded"}}\n\n'
    server = serve(chunked(chunk("Hel") + error + GOOD))
    with pytest.raises(StreamBroken, match="the model is overloaded"):
        read(server)


def test_a_refusal_names_its_status_and_message_and_is_read_bounded(
        serve: Callable[..., RawServer]) -> None:
    body = json.dumps({"error": {"message": "bad model " + "x" * 100_000}}).encode()
    server = serve(b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                   b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    with pytest.raises(ProviderError, match=r"Error code: 400\b") as raised:
        read(server)
    assert not isinstance(raised.value, StreamBroken)
    # the body was cut at the error body limit, so it is no JSON: no message is made up
    assert "x" * 3000 not in str(raised.value)


def test_an_event_that_never_ends_is_not_buffered_without_end(
        serve: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sse, "EVENT_LIMIT", 100_000)

    def flood(conn: socket.socket) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                     b"Connection: close\r\n\r\ndata: ")
        while True:
            conn.sendall(b"y" * 65536)

    with pytest.raises(StreamBroken, match="an event of over 100000 bytes"):
        read(serve(flood))


def test_a_server_that_keeps_sending_after_done_does_not_hold_the_reply(
        serve: Callable[..., RawServer]) -> None:
    def endless(conn: socket.socket) -> None:
        conn.sendall(chunked(GOOD, end=False))
        piece = b": keep-alive comment\n" * 3000
        while True:
            conn.sendall(b"%x\r\n%s\r\n" % (len(piece), piece))

    [events] = read(serve(endless))
    assert isinstance(events[-1], StreamEnd) and events[-1].stop_reason == "stop"


def test_a_reply_cut_short_closes_its_connection_and_the_next_reads_its_own(
        serve: Callable[..., RawServer]) -> None:
    """A reply the agent stops reading (its call is complete) leaves bytes on the wire: they
    must not be read as the next reply's, so its connection is closed, not kept."""
    first = chunked(chunk("Hello") + chunk(" ignored") * 50, end=False)
    server = serve(first, chunked(GOOD))
    provider = OpenAIProvider(api_key="k", base_url=server.url, max_retries=0)

    async def scenario() -> tuple[StreamEvent, list[StreamEvent]]:
        try:
            events = provider.astream(REQUEST)
            head = await anext(events)
            await events.aclose()
            return head, [event async for event in provider.astream(REQUEST)]
        finally:
            await provider.aclose()

    head, second = asyncio.run(asyncio.wait_for(scenario(), 20))
    assert head == TextDelta("Hello")
    assert second[:2] == [TextDelta("Hello"), TextDelta(" there.")]
    assert isinstance(second[-1], StreamEnd) and server.connections == 2


def test_a_redirect_is_followed_with_the_request_as_the_sdk_client_does(
        serve: Callable[..., RawServer]) -> None:
    target = serve(chunked(GOOD))
    moved = (b"HTTP/1.1 307 Temporary Redirect\r\nLocation: %s/chat/completions\r\n"
             b"Content-Length: 0\r\n\r\n" % target.url.encode())
    [events] = read(serve(moved))
    assert events[:2] == [TextDelta("Hello"), TextDelta(" there.")]
    assert target.connections == 1


def test_requests_go_through_the_proxy_the_environment_names(
        serve: Callable[..., RawServer], monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK client's proxy for the base URL is used (here HTTP_PROXY, as httpx reads it):
    the model's server itself is never reached."""
    proxy = serve(chunked(GOOD))
    unreachable = serve()
    unreachable.close()
    monkeypatch.setenv("HTTP_PROXY", proxy.url.removesuffix("/v1"))
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    [events] = read(unreachable)
    assert events[:2] == [TextDelta("Hello"), TextDelta(" there.")]
    assert proxy.connections == 1


STREAM = [b"data: {\"a\": 1}\n\n", b": a comment\n\n", b"event: ping\ndata: x\r\ndata: y\r\n\r\n",
          b"id: 3\ndata:z\r\rdata: last"]
"""Events with LF, CRLF and CR line ends, a comment, other fields, data split over lines,
``data:`` with no space, and a last event with no blank line after it."""


async def _pieces(data: bytes, cuts: list[int]) -> AsyncIterator[bytes]:
    start = 0
    for cut in sorted(set(cuts)):
        yield data[start:cut]
        start = cut
    yield data[start:]


async def _events(data: bytes, cuts: list[int]) -> list[str]:
    return [event async for event in sse._event_data(_pieces(data, cuts))]


@given(st.lists(st.integers(0, len(b"".join(STREAM))), max_size=12))
def test_events_are_the_same_wherever_the_bytes_are_split(cuts: list[int]) -> None:
    data = b"".join(STREAM)
    assert asyncio.run(_events(data, cuts)) == ['{"a": 1}', "x\ny", "z", "last"]


def _read_without_aclose(url: str) -> list[StreamEvent]:
    provider = OpenAIProvider(api_key="k", base_url=url, max_retries=0)

    async def scenario() -> list[StreamEvent]:
        return [event async for event in provider.astream(REQUEST)]

    return asyncio.run(scenario())


def test_clients_left_open_are_closed_when_their_loop_ends(
        serve: Callable[..., RawServer], caplog: pytest.LogCaptureFixture) -> None:
    """A library user's ``asyncio.run(agent.arun(...))`` never calls ``aclose``: the loop's
    end closes the connections, and nothing is left to the garbage collector to complain of."""
    server = serve(chunked(GOOD))
    with caplog.at_level(logging.DEBUG):
        assert isinstance(_read_without_aclose(server.url)[-1], StreamEnd)
        gc.collect()
    assert not [r for r in caplog.records if "nclosed" in r.getMessage()]
