"""An in-process provider that replays scripted replies: the test double for code built on
providers (as httpx ships ``MockTransport``), so agent-loop tests need no socket."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass

from .base import ChatRequest, NativeCall, ProviderError, StreamEnd, StreamEvent, TextDelta


@dataclass(frozen=True, slots=True)
class ScriptedReply:
    """One reply: its text (streamed in ``chunk_size`` pieces), then its native calls.

    ``stop_reason`` is what the stream ends with; None ends the stream without a
    :class:`StreamEnd`, as a connection that drops mid-reply does.
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
        self._script = list(script)
        self.requests: list[ChatRequest] = []
        self.delivered: list[int] = []

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]:
        self.requests.append(request)
        index = len(self.delivered)
        self.delivered.append(0)
        if not self._script:
            raise ProviderError(f"{self.name}: no scripted reply left for request {index + 1}")
        reply = _reply(self._script.pop(0), request)
        for event in _events(reply):
            self.delivered[index] += 1
            yield event


def _reply(item: Script, request: ChatRequest) -> ScriptedReply:
    if isinstance(item, str):
        return ScriptedReply(item)
    if isinstance(item, ScriptedReply):
        return item
    return item(request)


def _events(reply: ScriptedReply) -> list[StreamEvent]:
    size = max(1, reply.chunk_size)
    events: list[StreamEvent] = [TextDelta(reply.text[i : i + size])
                                 for i in range(0, len(reply.text), size)]
    events += reply.calls
    if reply.stop_reason is not None:
        events.append(StreamEnd(reply.stop_reason))
    return events
