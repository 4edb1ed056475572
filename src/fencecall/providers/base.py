"""What every model provider looks like to the agent loop: a stream of events."""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Generator, Iterable, Iterator
from contextlib import AbstractAsyncContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, Literal, Protocol, TypeGuard, TypeVar

from ..accounting.checks import ReplyBounds
from ..accounting.tokens import Bytes, Tally, request_tokens
from ..config import Sampling
from ..defaults import MAX_TOKENS
from ..images import described, messages_image_tokens
from ..message import ImageRef, Message, TokenLogprob, Unencodable, Usage


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
    """The model stopped on its own. ``stop_reason`` is the provider's word for why; ``cut``
    says the reply is incomplete because it reached the output token limit."""

    stop_reason: str | None
    cut: bool = False


@dataclass(frozen=True, slots=True)
class Scores:
    """The generated tokens of a piece of the reply and their log probabilities (asked for
    with ``Sampling.logprobs``), sent before the :class:`TextDelta` they make up, so a
    reply cut at that text still holds its tokens."""

    tokens: tuple[TokenLogprob, ...]


StreamEvent = TextDelta | NativeCall | Usage | StreamEnd | Scores


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
    max_tokens: int = MAX_TOKENS
    sampling: Sampling = field(default_factory=Sampling)
    output_room: int | None = None
    """The output tokens the run's budgets leave the reply, by fencecall's count (None: no
    budget holds): its stream is cut there, as past ``max_tokens``, whatever the server
    does (see :func:`read_stream`)."""
    vision: bool = True
    """The model takes images; else each image is sent as a note saying what it was."""


class ProviderError(RuntimeError):
    """The provider failed (connection, authentication, bad request, a content filter); the
    message names the provider, its URL and what happened."""


class StreamBroken(ProviderError):
    """The reply stream ended before the model finished, or could not be read: nothing of
    it can be trusted, and asking again may well work."""


LENGTH_STOPS = frozenset({"length", "max_tokens", "model_length"})
FILTER_STOPS = frozenset({"content_filter", "refusal", "safety"})


def end_of_stream(where: str, stop_reason: str | None) -> StreamEnd:
    """The :class:`StreamEnd` a finished stream gets, or the error it is.

    No stop reason means the connection closed before the terminator (a dropped or cut
    stream); a content-filter stop is no answer either. A token-limit stop is an answer cut
    short, said in ``cut`` so the agent can have the model continue.
    """
    if stop_reason is None:
        raise StreamBroken(f"{where}: the reply stream ended before the model finished (no "
                           "stop reason: the connection closed early)")
    if stop_reason in FILTER_STOPS:
        raise ProviderError(f"{where}: the provider stopped the reply ({stop_reason}: its "
                            "content filter); nothing was answered")
    return StreamEnd(stop_reason, cut=stop_reason in LENGTH_STOPS)


@contextmanager
def vendor_errors(where: str, errors: type[Exception] | tuple[type[Exception], ...]
                  ) -> Iterator[None]:
    """Translate a vendor SDK's errors (``errors``, its base class) into
    :class:`ProviderError`, in one place."""
    try:
        yield
    except ProviderError:
        raise
    except errors as err:
        raise ProviderError(f"{where}: {err}") from err


@contextmanager
def reading_stream(where: str) -> Iterator[None]:
    """Around the reading of a reply stream: whatever breaks it there (a dropped connection,
    an event that is not JSON, an error event) makes the reply :class:`StreamBroken`."""
    try:
        yield
    except (ProviderError, GeneratorExit):
        raise
    except Exception as err:
        raise StreamBroken(f"{where}: the reply stream broke off "
                           f"({type(err).__name__}: {err})") from err


class Provider(Protocol):
    """A model API. ``stream`` is a generator: closing it aborts the HTTP response, which is
    how the agent stops a model as soon as a complete tool call has appeared. ``url`` is where
    it sends requests (None for in-process providers).

    A provider MAY also have ``astream(request)``, an async generator of the same events in
    the same order with the same errors, for requests made on an event loop: closing it
    (``aclose()``) aborts the HTTP response as promptly. :func:`has_astream` tells."""

    name: str
    url: str | None

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]: ...


class AsyncProvider(Provider, Protocol):
    """A provider that also streams on an event loop (what :func:`has_astream` finds)."""

    def astream(self, request: ChatRequest) -> AsyncGenerator[StreamEvent, None]: ...


def has_astream(provider: Provider) -> TypeGuard[AsyncProvider]:
    """Whether ``provider`` has ``astream`` (one without can still serve an event loop, its
    ``stream`` run in a thread)."""
    return callable(getattr(provider, "astream", None))


C = TypeVar("C")
C_co = TypeVar("C_co", covariant=True)
C_contra = TypeVar("C_contra", contravariant=True)


class ChunkReader(Protocol[C_contra]):
    """Turns a vendor's stream chunks into events, the one mapping ``stream`` and
    ``astream`` share: ``feed`` each chunk as it comes, ``finish`` once the stream has ended
    (events that need the whole stream, and :func:`end_of_stream`'s verdict)."""

    @property
    def taken(self) -> Tally:
        """All of the reply's output it took so far, text and call arguments alike (counted
        as it comes, so the reply can be cut before it fills memory)."""
        ...

    def feed(self, chunk: C_contra) -> Iterable[StreamEvent]: ...

    def finish(self, where: str) -> Iterable[StreamEvent]: ...


class Encodable(Generic[C]):
    """A reader whose events can be encoded: lone surrogates (what a JSON ``"\\ud800"``
    decodes to) in the reply's text and native calls (their arguments' escapes too) become
    U+FFFD where they enter, and the text ends with a line saying which were replaced
    (:class:`~fencecall.message.Unencodable`), so the user and the model see it and the log,
    which could not hold them, keeps it. A reply closed early (at its first call, at a
    limit) keeps its U+FFFD without the line: its end, where the line goes, is dropped."""

    def __init__(self, reader: ChunkReader[C]):
        self._reader = reader
        self._unencodable = Unencodable()

    @property
    def taken(self) -> Tally:
        return self._reader.taken

    def feed(self, chunk: C) -> Iterator[StreamEvent]:
        return map(self._clean, self._reader.feed(chunk))

    def finish(self, where: str) -> Iterator[StreamEvent]:
        events = [self._clean(event) for event in self._reader.finish(where)]
        if (note := self._unencodable.note()) is not None:
            yield TextDelta(f"\n{note}")
        yield from events

    def _clean(self, event: StreamEvent) -> StreamEvent:
        clean = self._unencodable.clean
        if isinstance(event, TextDelta):
            return TextDelta(clean(event.text))
        if isinstance(event, NativeCall):
            return NativeCall(clean(event.call_id), clean(event.name),
                              self._unencodable.clean_json(event.arguments))
        return event


class Chunks(Protocol[C_co]):
    """A vendor SDK's open reply stream (``Stream``)."""

    def __iter__(self) -> Iterator[C_co]: ...

    def close(self) -> None: ...


class AsyncChunks(Protocol[C_co]):
    """A vendor SDK's open async reply stream (``AsyncStream``)."""

    def __aiter__(self) -> AsyncIterator[C_co]: ...

    async def close(self) -> None: ...


class _Watch:
    """One reply's stream held to what its ``request`` may take (see
    :class:`~fencecall.accounting.checks.ReplyBounds`): usage that cannot be true is left
    out, so fencecall counts the reply itself, and :meth:`over` says when to cut it."""

    def __init__(self, request: ChatRequest, taken: Tally):
        self.bounds = ReplyBounds(
            request.max_tokens, request.output_room,
            lambda: request_tokens(Bytes(), request.system, wire_texts(request.messages),
                                   request.tools) + messages_image_tokens(request.messages))
        self.taken = taken
        self.cut: str | None = None

    def events(self, events: Iterable[StreamEvent]) -> Iterator[StreamEvent]:
        """``events`` but usage that cannot be true of the reply so far."""
        for event in events:
            if not isinstance(event, Usage) or self.bounds.believable(event, self.taken):
                yield event

    def over(self) -> bool:
        """Whether the reply is past what it may take: its stream is to be closed."""
        self.cut = self.bounds.cut(self.taken)
        return self.cut is not None

    def ending(self, reader: ChunkReader[C], where: str) -> Iterable[StreamEvent]:
        """The events that end the stream: a cut one ends cut (its unfinished calls and any
        usage dropped), else as ``reader`` ends it."""
        if self.cut is not None:
            return (StreamEnd(self.cut, cut=True),)
        return self.events(reader.finish(where))


def read_stream(where: str, errors: type[Exception], open_stream: Callable[[], Chunks[C]],
                reader: ChunkReader[C], request: ChatRequest) -> Generator[StreamEvent, None, None]:
    """The events of the stream ``open_stream`` opens for ``request``, its errors translated
    (``errors`` is the SDK's base class), cut once the reply is past what the request may take
    (:class:`_Watch`); the response is closed however the reading ends."""
    reader = Encodable(reader)
    watch = _Watch(request, reader.taken)
    with vendor_errors(where, errors):
        stream = open_stream()
        try:
            with reading_stream(where):
                for chunk in stream:
                    yield from watch.events(reader.feed(chunk))
                    if watch.over():
                        break
        finally:
            stream.close()
    yield from watch.ending(reader, where)


async def aread_stream(where: str, errors: type[Exception] | tuple[type[Exception], ...],
                       opening: AbstractAsyncContextManager[AsyncChunks[C]],
                       reader: ChunkReader[C],
                       request: ChatRequest) -> AsyncGenerator[StreamEvent, None]:
    """:func:`read_stream` on an event loop, the stream opened by entering ``opening`` (a
    gate's request) and closed before it is left."""
    reader = Encodable(reader)
    watch = _Watch(request, reader.taken)
    with vendor_errors(where, errors):
        async with opening as stream:
            try:
                with reading_stream(where):
                    async for chunk in stream:
                        for event in watch.events(reader.feed(chunk)):
                            yield event
                        if watch.over():
                            break
            finally:
                await stream.close()
    for event in watch.ending(reader, where):
        yield event


TurnKind = Literal["assistant", "native_result", "tool_result", "user"]


def turns(messages: Iterable[Message]) -> Iterator[tuple[TurnKind, Message]]:
    """Each message with what it is to a chat API: an assistant turn, the result of a native
    call made earlier (answered by id), another tool result, or a user turn."""
    native_ids: set[str] = set()
    for message in messages:
        if message.role == "assistant":
            native_ids.update(call.id for call in message.native_calls)
            yield "assistant", message
        elif message.role == "system":
            yield ("native_result" if message.call_id in native_ids else "tool_result"), message
        else:
            yield "user", message


def wire_texts(messages: Iterable[Message]) -> list[str]:
    """The text of each message as chat APIs are shown it (tool results marked as coming
    from the system, native calls' arguments beside the reply's text): what the model's
    server counts as input."""
    texts = []
    for kind, message in turns(messages):
        if kind == "tool_result":
            texts.append(tool_result_text(message))
        else:
            texts.append(message.content + "".join(json.dumps(dict(call.arguments))
                                                   for call in message.native_calls))
    return texts


def shown_images(message: Message, vision: bool) -> tuple[ImageRef, ...]:
    """The images of ``message`` sent as images: none to a model that takes none, and none
    whose kept file is gone (a log's folder pruned by hand), which would fail every request."""
    return tuple(image for image in message.images if vision and Path(image.path).is_file())


def with_image_notes(text: str, message: Message, vision: bool) -> str:
    """``text``, followed by a note for each image of ``message`` not sent as one
    (:func:`~fencecall.images.described`)."""
    shown = shown_images(message, vision)
    notes = [described(image, gone=vision) for image in message.images if image not in shown]
    return "\n".join([text, *notes])


def tool_result_text(message: Message) -> str:
    """How a tool result (a mid-conversation system message) is shown to chat APIs that only
    accept a system prompt at the start: as a user turn, marked as coming from the system."""
    return f"<system>\n{message.content}\n</system>"


def sampling_options(sampling: Sampling, stop_key: str) -> dict[str, Any]:
    """The sampling settings that are set, as keyword arguments of a vendor SDK's create call
    (``stop_key`` is what it calls stop sequences)."""
    sent: dict[str, Any] = {}
    if sampling.temperature is not None:
        sent["temperature"] = sampling.temperature
    if sampling.top_p is not None:
        sent["top_p"] = sampling.top_p
    if sampling.stop:
        sent[stop_key] = list(sampling.stop)
    return sent
