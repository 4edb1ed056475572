"""OpenAI-compatible chat completions (OpenAI, llama.cpp, vLLM, Ollama…), streaming."""

from __future__ import annotations

import json
from collections.abc import Generator, Mapping
from typing import Any

import openai

from ..tools.spec import api_name
from .base import (
    ChatRequest,
    NativeCall,
    StreamEvent,
    TextDelta,
    Usage,
    end_of_stream,
    native_calls,
    reading_stream,
    sampling_options,
    tool_result_text,
    turns,
    vendor_errors,
)

DESCRIPTION_LIMIT = 1024


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
    system messages after the first.
    """
    out: list[dict[str, Any]] = [{"role": "system", "content": request.system}]
    for kind, message in turns(request.messages):
        if kind == "assistant":
            entry: dict[str, Any] = {"role": "assistant", "content": message.content or None}
            if calls := native_calls(message):
                entry["tool_calls"] = [
                    {"id": c["id"], "type": "function",
                     "function": {"name": api_name(c["name"]),
                                  "arguments": json.dumps(c["arguments"])}}
                    for c in calls]
            out.append(entry)
        elif kind == "native_result":
            out.append({"role": "tool", "tool_call_id": message.call_id,
                        "content": message.content})
        elif kind == "tool_result":
            out.append({"role": "user", "content": tool_result_text(message)})
        else:
            out.append({"role": "user", "content": message.content})
    return out


def _usage(usage: Any) -> Usage:
    """Chat-completions usage: cached prompt tokens are part of ``prompt_tokens``."""
    details = getattr(usage, "prompt_tokens_details", None)
    cached = (getattr(details, "cached_tokens", 0) or 0) if details is not None else 0
    return Usage(input_tokens=(usage.prompt_tokens or 0) - cached,
                 output_tokens=usage.completion_tokens or 0, cache_read_tokens=cached)


class OpenAIProvider:
    """Streams from any server speaking the OpenAI chat-completions protocol."""

    def __init__(self, *, api_key: str | None, base_url: str | None = None,
                 name: str = "openai", timeout: float = 600.0, max_retries: int = 2):
        self.name = name
        self._client = openai.OpenAI(api_key=api_key or "not-needed", base_url=base_url,
                                     timeout=timeout, max_retries=max_retries)
        self.url: str | None = str(self._client.base_url)

    def stream(self, request: ChatRequest) -> Generator[StreamEvent, None, None]:
        tools: Any = [openai_tool(schema) for schema in request.tools] or openai.omit
        messages: Any = to_openai_messages(request)
        pending: dict[int, dict[str, str]] = {}
        stop_reason = None
        where = f"{self.name} ({self._client.base_url})"
        with vendor_errors(where, openai.APIError):
            stream = self._client.chat.completions.create(
                model=request.model, messages=messages, stream=True,
                max_tokens=request.max_tokens, tools=tools,
                stream_options={"include_usage": True},
                **sampling_options(request.sampling, "stop"))
            try:
                with reading_stream(where):
                    for chunk in stream:
                        if chunk.usage is not None:
                            yield _usage(chunk.usage)
                        if not chunk.choices:
                            continue
                        choice = chunk.choices[0]
                        delta = choice.delta
                        if delta.content:
                            yield TextDelta(delta.content)
                        for part in delta.tool_calls or ():
                            slot = pending.setdefault(
                                part.index, {"id": "", "name": "", "args": ""})
                            if part.id:
                                slot["id"] = part.id
                            if part.function is not None:
                                slot["name"] += part.function.name or ""
                                slot["args"] += part.function.arguments or ""
                        stop_reason = choice.finish_reason or stop_reason
            finally:
                stream.close()
        for index in sorted(pending):
            slot = pending[index]
            yield NativeCall(slot["id"] or f"call_{index}", slot["name"], slot["args"] or "{}")
        yield end_of_stream(where, stop_reason)

