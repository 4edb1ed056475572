"""OpenAI-compatible chat completions (OpenAI, llama.cpp, vLLM, Ollama…), streaming."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from typing import Any

import openai

from ..accounting.checks import count_of
from ..accounting.tokens import Tally
from ..images import OPENAI_SIDE, encoded
from ..message import ImageRef, Message, TokenLogprob, Unencodable, Usage
from ..tools.spec import api_name
from . import _sse as sse
from ._gate import Failure
from ._sdk import Sdk, SdkProvider
from ._sse import EventStream, SseClient
from .base import (
    ChatRequest,
    NativeCall,
    Scores,
    StreamEvent,
    TextDelta,
    end_of_stream,
    sampling_options,
    shown_images,
    tool_result_text,
    turns,
    with_image_notes,
)

DESCRIPTION_LIMIT = 1024
OPENAI_API = "api.openai.com"


def openai_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A chat-completions ``tools`` entry from a neutral function schema."""
    return {"type": "function", "function": {
        "name": schema["name"],
        "description": schema["description"][:DESCRIPTION_LIMIT],
        "parameters": schema["parameters"],
    }}


def to_openai_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """Our messages as chat-completions messages.

    Results of native calls become ``tool`` messages after the assistant message that made
    the calls; other system messages become marked user turns, since many servers reject
    system messages after the first. A ``tool`` message holds no image, so the images of
    native results follow the run of ``tool`` messages in a user message of their own.
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    held: list[dict[str, Any]] = []
    for kind, message in turns(request.messages):
        if kind != "native_result" and held:
            out.append({"role": "user", "content": held})
            held = []
        if kind == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if calls := message.native_calls:
                entry["tool_calls"] = [
                    {"id": c.id, "type": "function",
                     "function": {"name": api_name(c.name),
                                  "arguments": json.dumps(dict(c.arguments))}}
                    for c in calls]
            out.append(entry)
        elif kind == "native_result":
            out.append({"role": "tool", "tool_call_id": message.call_id,
                        "content": with_image_notes(message.content, message, request.vision)})
            if shown := shown_images(message, request.vision):
                held += [{"type": "text", "text": f"[the images of call {message.call_id}]"},
                         *map(_image_part, shown)]
        else:
            text = tool_result_text(message) if kind == "tool_result" else message.content
            out.append({"role": "user", "content": _content(text, message, request.vision)})
    if held:
        out.append({"role": "user", "content": held})
    return out


def _content(text: str, message: Message, vision: bool) -> str | list[dict[str, Any]]:
    """A user turn's content: its text, or its text and images as parts."""
    text = with_image_notes(text, message, vision)
    if not (shown := shown_images(message, vision)):
        return text
    return [{"type": "text", "text": text}, *map(_image_part, shown)]


def _image_part(image: ImageRef) -> dict[str, Any]:
    data = encoded(image, OPENAI_SIDE)
    return {"type": "image_url", "image_url": {"url": f"data:{image.media_type};base64,{data}"}}


def _usage(usage: Mapping[str, Any]) -> Usage | None:
    """Chat-completions usage: cached prompt tokens are part of ``prompt_tokens``. None where
    a count is missing or no count (see :func:`~fencecall.accounting.checks.count_of`), or
    more are cached than were sent: the reply is still good, and fencecall counts it."""
    details = usage.get("prompt_tokens_details")
    cached = count_of(details.get("cached_tokens"), 0) if isinstance(details, dict) else 0
    prompt = count_of(usage.get("prompt_tokens"))
    completion = count_of(usage.get("completion_tokens"))
    if prompt is None or completion is None or cached is None or cached > prompt:
        return None
    return Usage(input_tokens=prompt - cached, output_tokens=completion,
                 cache_read_tokens=cached)


def _scores(choice: Mapping[str, Any]) -> tuple[TokenLogprob, ...]:
    """A chunk's scored tokens: ``logprobs.content[]`` (``token``, ``logprob``; llama.cpp's
    server adds each token's ``id``), with vLLM's ``token_ids`` (given for
    ``return_token_ids``) beside them. None at all where any entry is not one: tokens
    without their place in the reply would mislead."""
    logprobs = choice.get("logprobs")
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    if not isinstance(content, list):
        return ()
    ids = choice.get("token_ids")
    if not isinstance(ids, list) or len(ids) != len(content):
        ids = [None] * len(content)
    found = []
    for entry, given in zip(content, ids, strict=True):
        if not isinstance(entry, dict) or not isinstance(token := entry.get("token"), str) \
                or not isinstance(logprob := entry.get("logprob"), int | float) \
                or isinstance(logprob, bool):
            return ()
        token_id = next((i for i in (given, entry.get("id"))
                         if isinstance(i, int) and not isinstance(i, bool)), None)
        found.append(TokenLogprob(Unencodable().clean(token), float(logprob), token_id))
    return tuple(found)


class _Chunks:
    """Chat-completions chunks to events, for ``stream`` and ``astream`` alike: text as it
    comes; native calls, which arrive in pieces, and the stop reason at the end."""

    def __init__(self) -> None:
        self.pending: dict[int, dict[str, str]] = {}
        self.stop_reason: str | None = None
        self.taken = Tally()

    def feed(self, chunk: object) -> Iterator[StreamEvent]:
        if not isinstance(chunk, dict):
            raise TypeError(f"a chunk that is not a JSON object: {chunk!r:.80}")
        if (usage := chunk.get("usage")) and isinstance(usage, dict) \
                and (reported := _usage(usage)) is not None:
            yield reported
        if not (choices := chunk.get("choices")):
            return
        choice = choices[0]
        delta = choice.get("delta") or {}
        if scored := _scores(choice):
            yield Scores(scored)
        if content := delta.get("content"):
            self.taken.add(content)
            yield TextDelta(content)
        for part in delta.get("tool_calls") or ():
            slot = self.pending.setdefault(
                part.get("index") or 0, {"id": "", "name": "", "args": ""})
            if call_id := part.get("id"):
                slot["id"] = call_id
            if function := part.get("function"):
                slot["name"] += function.get("name") or ""
                piece = function.get("arguments") or ""
                self.taken.add(piece)
                slot["args"] += piece
        self.stop_reason = choice.get("finish_reason") or self.stop_reason

    def finish(self, where: str) -> Iterator[StreamEvent]:
        for index in sorted(self.pending):
            slot = self.pending[index]
            yield NativeCall(slot["id"] or f"call_{index}", slot["name"], slot["args"] or "{}")
        yield end_of_stream(where, self.stop_reason)


class OpenAIProvider(SdkProvider[openai.OpenAI, SseClient, object]):
    """Streams from any server speaking the OpenAI chat-completions protocol.

    ``stream`` goes through the SDK's client (its retries, timeouts, errors and stream
    reading) as plain JSON: our messages are already plain dicts, and the typed ``create``
    call re-walks them against the SDK's type hints and builds a model object per chunk.
    ``astream``, a batch's path, sends the same JSON with the SDK's HTTP client class, base
    URL and headers, and reads the events itself (:mod:`._sse`): the SDK's work per request
    was a third of fencecall's CPU per batch task (see ``benchmarks/batch.py``). The rest,
    ``astream``'s gate included, is :class:`~fencecall.providers._sdk.SdkProvider`'s.
    """

    sdk = Sdk(
        openai.OpenAI, None, openai.DefaultAioHttpClient, openai.APIError,
        openai.APIConnectionError, openai.APIStatusError)
    default_name = "openai"
    gives_logprobs = True
    """``Sampling.logprobs`` is asked of the server (see :func:`_scores`)."""

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": request.model, "messages": to_openai_messages(request), "stream": True,
            "max_tokens": request.max_tokens, "stream_options": {"include_usage": True},
            **sampling_options(request.sampling, "stop")}
        if request.tools:
            body["tools"] = [openai_tool(schema) for schema in request.tools]
        if request.sampling.logprobs:
            body["logprobs"] = True
            if OPENAI_API not in (self.url or ""):  # OpenAI's own API refuses the extension
                body["return_token_ids"] = True  # vLLM's token ids; other servers ignore it
        return body

    def _open(self, client: openai.OpenAI, arguments: dict[str, Any]) -> openai.Stream[object]:
        return client.post("/chat/completions", body=arguments, cast_to=object, stream=True,
                           stream_cls=openai.Stream[object])

    async def _aopen(self, client: SseClient, arguments: dict[str, Any]) -> EventStream:
        return await client.open("/chat/completions", arguments)

    def _reader(self) -> _Chunks:
        return _Chunks()

    def _async_client(self) -> SseClient:
        """The SDK's headers but its telemetry (``X-Stainless-*``): each header is work for
        every request."""
        sync = self._client
        headers = {name: value for name, value in {**sync.default_headers,
                                                   **sync.auth_headers}.items()
                   if isinstance(value, str) and not name.startswith("X-Stainless")}
        return SseClient(self._http_client(), str(sync.base_url), headers)

    @property
    def _async_errors(self) -> tuple[type[Exception], ...]:
        return sse.ERRORS

    def _failure(self, err: Exception) -> Failure | None:
        return sse.failure(err)
