"""Anthropic messages API, streaming."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import anthropic
from anthropic.types import RawMessageStreamEvent

from ..accounting.checks import count_of
from ..accounting.tokens import Tally
from ..images import ANTHROPIC_SIDE, encoded
from ..message import Message, Usage
from ..tools.spec import api_name
from ._sdk import Sdk, SdkProvider
from .base import (
    ChatRequest,
    NativeCall,
    StreamEvent,
    TextDelta,
    end_of_stream,
    sampling_options,
    shown_images,
    tool_result_text,
    turns,
    with_image_notes,
)


def anthropic_tool(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A messages-API ``tools`` entry from a neutral function schema."""
    return {"name": schema["name"], "description": schema["description"],
            "input_schema": schema["parameters"]}


def to_anthropic_messages(request: ChatRequest) -> list[dict[str, Any]]:
    """Our messages as Anthropic turns: roles alternate, so consecutive user-side turns (user
    prompts and tool results) merge into one message of several content blocks."""
    out: list[dict[str, Any]] = []

    def add(role: str, block: dict[str, Any]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["content"].append(block)
        else:
            out.append({"role": role, "content": [block]})

    for kind, message in turns(request.messages):
        if kind == "assistant":
            calls = message.native_calls
            if message.content or not calls:
                add("assistant", {"type": "text", "text": message.content or "(no text)"})
            for call in calls:
                add("assistant", {"type": "tool_use", "id": call.id,
                                  "name": api_name(call.name), "input": dict(call.arguments)})
        elif kind == "native_result":
            add("user", {"type": "tool_result", "tool_use_id": message.call_id,
                         "content": _content(message.content, message, request.vision)})
        else:
            text = tool_result_text(message) if kind == "tool_result" else message.content
            for block in _blocks(text, message, request.vision):
                add("user", block)
    return out


def _blocks(text: str, message: Message, vision: bool) -> list[dict[str, Any]]:
    """A text block, and an image block for each image sent (a note for any other)."""
    return [{"type": "text", "text": with_image_notes(text, message, vision)},
            *({"type": "image", "source": {"type": "base64", "media_type": image.media_type,
                                           "data": encoded(image, ANTHROPIC_SIDE)}}
              for image in shown_images(message, vision))]


def _content(text: str, message: Message, vision: bool) -> str | list[dict[str, Any]]:
    """A tool result's content: its text, or its text and image blocks."""
    return _blocks(text, message, vision) if shown_images(
        message, vision) else with_image_notes(text, message, vision)


CACHE_BREAKPOINT = {"type": "ephemeral"}
"""Anthropic's prompt cache marker: the request's prefix (tools, system, messages, in that
order) up to and including the block carrying it is cached, and read back at a tenth of the
input price by any later request that starts with the same bytes (a prefix shorter than the
model's minimum, 1,024 tokens or more, is silently not cached). Two are set, of the four the
API allows: the system prompt and the latest turn. None goes on the last tool: the system
block's prefix holds the tools already (and with no system prompt, the latest turn's does), so
a third would only pay off for requests sharing the tools but not the system prompt, which a
session never makes."""


def system_blocks(system: str) -> list[dict[str, Any]]:
    """The system prompt as one cached text block, so every conversation and batch task that
    starts with the same tools and prompt reads them from the cache. None for a blank prompt:
    the API refuses a text block of white space only."""
    if not system.strip():
        return []
    return [{"type": "text", "text": system, "cache_control": dict(CACHE_BREAKPOINT)}]


def mark_latest_turn(messages: list[dict[str, Any]]) -> None:
    """Put the cache marker on the last block of the last message: the next request repeats
    these messages and only adds to them, so everything up to here is read from the cache. The
    marker is not part of the cached prefix, so the next request moves it to its own last block
    and still matches (the API looks back up to 20 blocks from a marker for a cached prefix)."""
    if messages:
        messages[-1]["content"][-1]["cache_control"] = dict(CACHE_BREAKPOINT)


def _usage(usage: Any) -> Usage | None:
    """Messages-API usage: cache reads and writes are counted apart from ``input_tokens``.
    None where a count is missing or no count (see
    :func:`~fencecall.accounting.checks.count_of`): fencecall counts the reply then."""
    fresh = count_of(getattr(usage, "input_tokens", None))
    read = count_of(getattr(usage, "cache_read_input_tokens", None), 0)
    written = count_of(getattr(usage, "cache_creation_input_tokens", None), 0)
    if fresh is None or read is None or written is None:
        return None
    return Usage(input_tokens=fresh, cache_read_tokens=read, cache_write_tokens=written)


class _Events:
    """Messages-API stream events to our events, for ``stream`` and ``astream`` alike: text
    as it comes, each native call when its block ends, usage and the stop reason at the end."""

    def __init__(self) -> None:
        self.blocks: dict[int, dict[str, str]] = {}
        self.usage: Usage | None = None
        """None until the message starts, and for good once a count in it is no count."""
        self.stop_reason: str | None = None
        self.taken = Tally()

    def feed(self, event: RawMessageStreamEvent) -> Iterator[StreamEvent]:
        if event.type == "message_start":
            self.usage = _usage(event.message.usage)
        elif event.type == "content_block_start":
            block = event.content_block
            if block.type == "tool_use":
                self.blocks[event.index] = {"id": block.id, "name": block.name, "json": ""}
        elif event.type == "content_block_delta":
            delta = event.delta
            if delta.type == "text_delta":
                self.taken.add(delta.text)
                yield TextDelta(delta.text)
            elif delta.type == "input_json_delta" and event.index in self.blocks:
                self.taken.add(delta.partial_json)
                self.blocks[event.index]["json"] += delta.partial_json
        elif event.type == "content_block_stop" and event.index in self.blocks:
            call = self.blocks.pop(event.index)
            yield NativeCall(call["id"], call["name"], call["json"] or "{}")
        elif event.type == "message_delta":
            self.stop_reason = event.delta.stop_reason or self.stop_reason
            output = count_of(getattr(event.usage, "output_tokens", None))
            self.usage = (None if self.usage is None or output is None
                          else replace(self.usage, output_tokens=output))

    def finish(self, where: str) -> Iterator[StreamEvent]:
        if self.usage is not None:
            yield self.usage
        yield end_of_stream(where, self.stop_reason)


class AnthropicProvider(
        SdkProvider[anthropic.Anthropic, anthropic.AsyncAnthropic, RawMessageStreamEvent]):
    """Streams from the Anthropic messages API (or a server speaking it); all but the wire
    format, ``astream``'s gate included, is :class:`~fencecall.providers._sdk.SdkProvider`'s.
    """

    sdk = Sdk(
        anthropic.Anthropic, anthropic.AsyncAnthropic, anthropic.DefaultAioHttpClient,
        anthropic.APIError, anthropic.APIConnectionError, anthropic.APIStatusError)
    default_name = "anthropic"

    def _arguments(self, request: ChatRequest) -> dict[str, Any]:
        """The ``messages.create`` arguments for ``request`` (but ``stream``)."""
        messages = to_anthropic_messages(request)
        mark_latest_turn(messages)
        return {"model": request.model, "max_tokens": request.max_tokens, "messages": messages,
                "system": system_blocks(request.system) or anthropic.omit,
                "tools": [anthropic_tool(schema) for schema in request.tools] or anthropic.omit,
                **sampling_options(request.sampling, "stop_sequences")}

    def _open(self, client: anthropic.Anthropic,
              arguments: dict[str, Any]) -> anthropic.Stream[RawMessageStreamEvent]:
        opened: anthropic.Stream[RawMessageStreamEvent] = client.messages.create(
            **arguments, stream=True)
        return opened

    async def _aopen(self, client: anthropic.AsyncAnthropic,
                     arguments: dict[str, Any]) -> anthropic.AsyncStream[RawMessageStreamEvent]:
        opened: anthropic.AsyncStream[RawMessageStreamEvent] = await client.messages.create(
            **arguments, stream=True)
        return opened

    def _reader(self) -> _Events:
        return _Events()
