"""What every model provider looks like to the agent loop: a stream of events."""

from __future__ import annotations

from collections.abc import Generator, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from ..message import Message


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
    """One generation: the conversation so far and, for native formats, the tools as
    vendor-neutral function schemas (``name``, ``description``, ``parameters``; see
    :meth:`~fencecall.tools.ToolSpec.function_schema`), which each provider turns into its
    own wire schema."""

    model: str
    system: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...] = ()
    max_tokens: int = 4096


class ProviderError(RuntimeError):
    """The provider failed (connection, authentication, bad request); the message says how."""


@contextmanager
def vendor_errors(errors: type[Exception] | tuple[type[Exception], ...],
                  provider: str) -> Iterator[None]:
    """Translate a vendor SDK's errors into :class:`ProviderError`, in one place."""
    try:
        yield
    except errors as err:
        raise ProviderError(f"{provider}: {err}") from err


class Provider(Protocol):
    """A model API. ``stream`` is a generator: closing it aborts the HTTP response, which is
    how the agent stops a model as soon as a complete tool call has appeared."""

    name: str

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]: ...


TurnKind = Literal["assistant", "native_result", "tool_result", "user"]


def turns(messages: Iterable[Message]) -> Iterator[tuple[TurnKind, Message]]:
    """Each message with what it is to a chat API: an assistant turn, the result of a native
    call made earlier (answered by id), another tool result, or a user turn."""
    native_ids: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            native_ids.update(call["id"] for call in native_calls(message))
            yield "assistant", message
        elif message.role == "system":
            yield ("native_result" if message.call_id in native_ids else "tool_result"), message
        else:
            yield "user", message


def native_calls(message: Message) -> list[dict[str, Any]]:
    """The native calls an assistant message made (``id``, ``name``, ``arguments``)."""
    calls: list[dict[str, Any]] = list(message.metadata.get("tool_calls") or ())
    return calls


def tool_result_text(message: Message) -> str:
    """How a tool result (a mid-conversation system message) is shown to chat APIs that only
    accept a system prompt at the start: as a user turn, marked as coming from the system."""
    return f"<system>\n{message.content}\n</system>"
