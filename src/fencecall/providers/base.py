"""What every model provider looks like to the agent loop: a stream of events."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Protocol

from ..message import Message
from ..tools.spec import ToolSpec


@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of the reply's text."""

    text: str


@dataclass(frozen=True, slots=True)
class NativeCall:
    """A complete native function call (``tool`` format); ``arguments`` is JSON text."""

    call_id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class StreamEnd:
    """The model stopped on its own (``stop_reason`` as the provider says it)."""

    stop_reason: str | None


StreamEvent = TextDelta | NativeCall | StreamEnd


@dataclass(frozen=True, slots=True)
class ChatRequest:
    """One generation: the conversation so far and, in ``tool`` format, the native tools."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[ToolSpec, ...] = ()
    max_tokens: int = 4096


class ProviderError(RuntimeError):
    """The provider failed (connection, authentication, bad request); the message says how."""


class Provider(Protocol):
    """A model API. ``stream`` is a generator: closing it aborts the HTTP response, which is
    how the agent stops a model as soon as a complete tool call has appeared."""

    name: str

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]: ...


def tool_result_text(message: Message) -> str:
    """How a tool result (a mid-conversation system message) is shown to chat APIs that only
    accept a system prompt at the start: as a user turn, marked as coming from the system."""
    return f"<system>\n{message.content}\n</system>"
