"""Anthropic messages API, streaming."""

from __future__ import annotations

from collections.abc import Generator, Mapping
from dataclasses import replace
from typing import Any

import anthropic

from ..message import Usage
from ..tools.spec import api_name
from .base import (
    ChatRequest,
    NativeCall,
    StreamEvent,
    TextDelta,
    end_of_stream,
    reading_stream,
    sampling_options,
    tool_result_text,
    turns,
    vendor_errors,
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
                         "content": message.content})
        elif kind == "tool_result":
            add("user", {"type": "text", "text": tool_result_text(message)})
        else:
            add("user", {"type": "text", "text": message.content})
    return out


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


def _usage(usage: Any) -> Usage:
    """Messages-API usage: cache reads and writes are counted apart from ``input_tokens``."""
    return Usage(input_tokens=usage.input_tokens or 0,
                 cache_read_tokens=getattr(usage, "cache_read_input_tokens", 0) or 0,
                 cache_write_tokens=getattr(usage, "cache_creation_input_tokens", 0) or 0)


class AnthropicProvider:
    """Streams from the Anthropic messages API (or a server speaking it)."""

    def __init__(self, *, api_key: str | None, base_url: str | None = None,
                 name: str = "anthropic", timeout: float = 600.0, max_retries: int = 2):
        self.name = name
        self._client = anthropic.Anthropic(api_key=api_key or "not-needed", base_url=base_url,
                                           timeout=timeout, max_retries=max_retries)
        self.url: str | None = str(self._client.base_url)

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]:
        tools: Any = [anthropic_tool(schema) for schema in request.tools] or anthropic.omit
        system: Any = system_blocks(request.system) or anthropic.omit
        messages: Any = to_anthropic_messages(request)
        mark_latest_turn(messages)
        blocks: dict[int, dict[str, str]] = {}
        usage = Usage()
        stop_reason = None
        where = f"{self.name} ({self._client.base_url})"
        with vendor_errors(where, anthropic.APIError):
            stream = self._client.messages.create(
                model=request.model, system=system, max_tokens=request.max_tokens,
                messages=messages, stream=True, tools=tools,
                **sampling_options(request.sampling, "stop_sequences"))
            try:
                with reading_stream(where):
                    for event in stream:
                        if event.type == "message_start":
                            usage = _usage(event.message.usage)
                        elif event.type == "content_block_start":
                            block = event.content_block
                            if block.type == "tool_use":
                                blocks[event.index] = {"id": block.id, "name": block.name,
                                                       "json": ""}
                        elif event.type == "content_block_delta":
                            delta = event.delta
                            if delta.type == "text_delta":
                                yield TextDelta(delta.text)
                            elif delta.type == "input_json_delta" and event.index in blocks:
                                blocks[event.index]["json"] += delta.partial_json
                        elif event.type == "content_block_stop" and event.index in blocks:
                            call = blocks.pop(event.index)
                            yield NativeCall(call["id"], call["name"], call["json"] or "{}")
                        elif event.type == "message_delta":
                            stop_reason = event.delta.stop_reason or stop_reason
                            usage = replace(usage, output_tokens=event.usage.output_tokens or 0)
            finally:
                stream.close()
        yield usage
        yield end_of_stream(where, stop_reason)

