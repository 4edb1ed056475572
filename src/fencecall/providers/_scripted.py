"""An in-process provider that replays scripted replies: the test double for code built on
providers (as httpx ships ``MockTransport``), so agent-loop tests need no socket."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Generator, Iterable, Iterator
from dataclasses import dataclass

from .base import (
    ChatRequest,
    NativeCall,
    ProviderError,
    StreamEvent,
    TextDelta,
    end_of_stream,
)


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One reply: its text (streamed in ``chunk_size`` pieces), then its native calls.

    ``stop_reason`` is what the stream ends with, read as the HTTP providers read theirs: None
    is a stream that broke off (:class:`StreamBroken`), ``length`` a reply cut at the token
    limit, ``content_filter`` an error.
    """

    text: str = ""
    calls: tuple[NativeCall, ...] = ()
    chunk_size: int = 16
    stop_reason: str | None = "stop"


Script = ScriptedReply | str | Callable[[ChatRequest], ScriptedReply]


class ScriptedProvider:
    """Answers each request with the next scripted reply and records what it was asked.

    A script item is a :class:`ScriptedReply`, a plain string, or a function of the request
    (to answer by what the conversation holds). ``delivered[i]`` counts the events request
    ``i`` received before its stream ended or was closed.
    """

    def __init__(self, script: Iterable[Script], name: str = "scripted"):
        self.name = name
        self.url: str | None = None
        self._script = list(script)
        self.requests: list[ChatRequest] = []
        self.delivered: list[int] = []

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]:
        index, events = self._answer(request)
        for event in events:
            self.delivered[index] += 1
            yield event

    async def astream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
        """``stream`` on an event loop, letting other tasks run before each event."""
        index, events = self._answer(request)
        for event in events:
            await asyncio.sleep(0)
            self.delivered[index] += 1
            yield event

    def _answer(self, request: ChatRequest) -> tuple[int, Iterator[StreamEvent]]:
        """Records ``request``; its index and the events of its reply."""
        self.requests.append(request)
        index = len(self.delivered)
        self.delivered.append(0)
        if not self._script:
            raise ProviderError(f"{self.name}: no scripted reply left for request {index + 1}")
        return index, _events(_reply(self._script.pop(0), request), self.name)


def _reply(item: Script, request: ChatRequest) -> ScriptedReply:
    if isinstance(item, str):
        return ScriptedReply(item)
    if isinstance(item, ScriptedReply):
        return item
    return item(request)


def _events(reply: ScriptedReply, where: str) -> Iterator[StreamEvent]:
    size = max(1, reply.chunk_size)
    for i in range(0, len(reply.text), size):
        yield TextDelta(reply.text[i : i + size])
    yield from reply.calls
    yield end_of_stream(where, reply.stop_reason)
