"""A real local HTTP server that speaks the OpenAI and Anthropic streaming protocols.

It serves recorded replies in order and records every request, so tests drive fencecall
through its real client code (the official SDKs, real sockets, real SSE) with no network.
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    """One recorded model reply: text, and optionally native tool calls.

    The rest makes the server misbehave on demand: ``finish`` overrides the stop reason
    (``length``, ``content_filter``, ``max_tokens``…); ``cut_after`` closes the connection
    after that many events, with no terminator; ``garbage`` sends a malformed SSE line after
    the text; ``status`` answers with that HTTP error instead (and ``retry_after``).
    """

    text: str = ""
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    chunk_size: int = 7
    delay: float = 0.0
    finish: str | None = None
    cut_after: int | None = None
    garbage: bool = False
    status: int = 200
    retry_after: str | None = None
    usage: tuple[int, int] = (12, 7)
    """(input, output) tokens the reply reports."""
    usage_extra: dict[str, Any] = field(default_factory=dict)
    """More (or replaced) fields of the usage objects (OpenAI's; Anthropic's in
    ``message_start`` and ``message_delta``): cached tokens, odd values (negative, null, a
    string, far too many)."""
    latency: float = 0.0
    """Seconds before the first event: the model's time to answer, once per reply (``delay``
    is slept after every event)."""
    logprobs: list[tuple[str, float]] | None = None
    """The reply's tokens and their log probabilities (their texts make up ``text``): asked
    for with ``logprobs``, the OpenAI stream sends one token a chunk with its
    ``logprobs.content``, and vLLM's ``token_ids`` when ``return_token_ids`` is asked."""
    token_ids: list[int] | None = None
    """The tokens' ids (one per token of ``logprobs``)."""


@dataclass
class Served:
    path: str
    body: dict[str, Any]
    headers: dict[str, str]
    chunks_sent: int = 0
    chunks_total: int = 0
    disconnected: bool = False
    input_tokens: int = 0
    """With a tokenizer: the request's input, as the server counts (and bills) it."""
    output_tokens: int = 0
    """With a tokenizer: the tokens of the text it sent, up to where the client left."""
    at: float = field(default_factory=time.monotonic)
    """When it came (``time.monotonic()``)."""


class _Server(ThreadingHTTPServer):
    request_queue_size = 1024
    """Many clients connect at once (batch runs): a short listen backlog would make some of
    them wait for a SYN retry."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that drops a kept-alive connection is no error worth a traceback."""
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)


Responder = Callable[[dict[str, Any]], Reply]
Tokenizer = Callable[[str], list[str]]

_PIECE = re.compile(r"\w{1,3}|[^\w\s]|\s+")


def dense_tokens(text: str) -> list[str]:
    """A tokenizer denser than 3 characters a token: words in pieces of up to three
    characters, each other character and each run of spaces one token."""
    return _PIECE.findall(text)


def _input_text(body: dict[str, Any]) -> list[str]:
    """The texts of a chat request the server reads: system prompt, messages, tools."""
    system = body.get("system")
    texts = [system] if isinstance(system, str) else [
        block.get("text", "") for block in system or () if isinstance(block, dict)]
    for message in body.get("messages", []):
        content = message.get("content")
        if isinstance(content, str):
            texts.append(content)
        elif isinstance(content, list):
            texts.extend(part.get("text", "") for part in content if isinstance(part, dict))
        for call in message.get("tool_calls") or ():
            texts.append(call.get("function", {}).get("arguments", ""))
    if body.get("tools"):
        texts.append(json.dumps(body["tools"]))
    return texts


class FakeModelServer:
    """``with FakeModelServer([Reply(...), ...]) as server: server.openai_url``.

    ``respond``, when given, chooses each request's reply from its JSON body (for many
    conversations at once, say by their prompt) instead of the recorded list; it is called
    from the server's threads, one per request.
    """

    def __init__(self, replies: list[Reply] | None = None, *,
                 respond: Responder | None = None,
                 models: list[dict[str, Any]] | None = None,
                 props: dict[str, Any] | None = None, keep_alive: bool = False,
                 tokenizer: Tokenizer | None = None, template_tokens: int = 0,
                 window: int | None = None):
        self.replies = list(replies or ())
        self.keep_alive = keep_alive
        """Stream with chunked encoding and keep the connection for the next request, as
        real model servers do (otherwise each reply ends by closing its connection)."""
        self.models = models
        """What ``GET /v1/models`` lists (404 when None), as vLLM lists ``max_model_len``."""
        self.props = props
        """What ``GET /props`` answers (404 when None), as llama.cpp's server does."""
        self.respond = respond
        self.tokenizer = tokenizer
        """With a tokenizer the server serves ``POST /tokenize`` (vLLM's and llama.cpp's
        bodies) and Anthropic's ``POST /v1/messages/count_tokens``, reports usage by its own
        count, and counts what each request billed."""
        self.window = window
        """With a tokenizer: the model's context window, enforced as vLLM and OpenAI do (a
        request whose input and ``max_tokens`` exceed it gets HTTP 400, "maximum context
        length"), and listed as ``max_model_len`` by ``/tokenize``."""
        self.over_window: list[Served] = []
        """The requests refused for exceeding the window."""
        self.template_tokens = template_tokens
        """Tokens the chat template adds to each request's input (a default system prompt)."""
        self.requests: list[Served] = []
        self.tokenize_calls = 0
        self.count_requests: list[Served] = []
        """With a tokenizer: the requests to Anthropic's ``POST /v1/messages/count_tokens``,
        which counts a request's input as the server bills it (no chat request)."""
        self.count_status = 200
        """The status that endpoint answers with: set another to make it fail as the API
        does on an error."""
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                found: Any = (
                    {"object": "list", "data": server.models}
                    if self.path.endswith("/models") and server.models is not None
                    else server.props if self.path == "/props" else None)
                if found is None:
                    self.send_error(404)
                    return
                self._json(found)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", "0"))
                body = json.loads(self.rfile.read(length) or b"{}")
                if self.path.endswith("/messages/count_tokens"):
                    self._count_tokens(body)
                    return
                if not self.path.endswith(("/chat/completions", "/messages")):
                    self._tokenize(body)
                    return
                served = Served(self.path, body, {k.lower(): v for k, v in self.headers.items()})
                if server.window is not None and server.tokenizer is not None:
                    asked = server.input_tokens(body)
                    most = int(body.get("max_tokens") or body.get("max_completion_tokens") or 0)
                    if asked + most > server.window:
                        with server._lock:
                            server.over_window.append(served)
                        self._error(Reply(status=400), message=(
                            f"This model's maximum context length is {server.window} tokens. "
                            f"However, you requested {asked + most} tokens ({asked} in the "
                            f"messages, {most} in the completion). Please reduce the length "
                            "of the messages or completion."))
                        return
                respond = server.respond
                with server._lock:
                    server.requests.append(served)
                    reply = (Reply() if respond is not None
                             else server.replies.pop(0) if server.replies
                             else Reply("(no more recorded replies)"))
                if respond is not None:
                    reply = respond(body)
                if reply.latency:
                    time.sleep(reply.latency)
                if reply.status != 200:
                    self._error(reply)
                    return
                pieces: list[int] = []
                if server.tokenizer is not None:
                    count = server.tokenizer
                    served.input_tokens = server.input_tokens(body)
                    reply = replace(reply, usage=(served.input_tokens, len(count(reply.text))))
                    pieces = [len(count(p)) for p in _pieces(reply.text, reply.chunk_size)]
                if self.path.endswith("/chat/completions"):
                    events = list(_openai_events(reply, body.get("model", "m"),
                                                 bool((body.get("stream_options") or {})
                                                      .get("include_usage")), body))
                elif self.path.endswith("/messages"):
                    events = list(_anthropic_events(reply, body.get("model", "m")))
                else:
                    self.send_error(404)
                    return
                if reply.garbage:
                    events.insert(len(events) - 2, "data: {this is not json\n\n")
                if reply.cut_after is not None:
                    events = events[: reply.cut_after]
                served.chunks_total = len(events)
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                chunked = server.keep_alive and reply.cut_after is None
                if chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for event in events:
                        data = event.encode()
                        self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data) if chunked
                                         else data)
                        self.wfile.flush()
                        served.chunks_sent += 1
                        if 1 <= served.chunks_sent - 1 <= len(pieces):  # a text chunk
                            served.output_tokens += pieces[served.chunks_sent - 2]
                        if reply.delay:
                            time.sleep(reply.delay)
                    if chunked:
                        self.wfile.write(b"0\r\n\r\n")
                        self.wfile.flush()
                except (BrokenPipeError, ConnectionResetError):
                    served.disconnected = True
                    chunked = False
                self.close_connection = not chunked

            def _tokenize(self, body: dict[str, Any]) -> None:
                text = body.get("prompt", body.get("content"))
                if server.tokenizer is None or not self.path.endswith("/tokenize") \
                        or not isinstance(text, str):
                    self.send_error(404)
                    return
                with server._lock:
                    server.tokenize_calls += 1
                tokens = server.tokenizer(text)
                found: dict[str, Any] = {"tokens": list(range(len(tokens)))}
                if "prompt" in body:  # vLLM's answer
                    found.update(count=len(tokens), max_model_len=server.window or 4096)
                self._json(found)

            def _count_tokens(self, body: dict[str, Any]) -> None:
                """Anthropic's token counting: a request's input, as a chat request's is
                billed; like the real API, it refuses a text block of white space only."""
                if server.tokenizer is None:
                    self.send_error(404)
                    return
                with server._lock:
                    server.count_requests.append(Served(
                        self.path, body, {k.lower(): v for k, v in self.headers.items()}))
                if server.count_status != 200:
                    self._error(Reply(status=server.count_status))
                    return
                if any(not text.strip() for text in _input_text(body)):
                    self._error(Reply(status=400))
                    return
                self._json({"input_tokens": server.input_tokens(body)})

            def _json(self, found: Any) -> None:
                data = json.dumps(found).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _error(self, reply: Reply, message: str | None = None) -> None:
                payload = json.dumps({"error": {
                    "message": message or f"fake error {reply.status}",
                    "type": "invalid_request_error" if message else "fake",
                    "code": "context_length_exceeded" if message else None}}).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                if reply.retry_after is not None:
                    self.send_header("Retry-After", reply.retry_after)
                self.end_headers()
                self.wfile.write(payload)

        self._httpd = _Server(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def input_tokens(self, body: dict[str, Any]) -> int:
        """With a tokenizer: a chat request's input as the server counts (and bills) it,
        with each message's template tokens and the chat template's own."""
        assert self.tokenizer is not None
        return (sum(len(self.tokenizer(t)) for t in _input_text(body))
                + 4 * (1 + len(body.get("messages", []))) + 3 + self.template_tokens)

    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def openai_url(self) -> str:
        return self.base_url + "/v1"

    def billed(self) -> int:
        """With a tokenizer: every token the server billed (input, and output sent)."""
        return sum(r.input_tokens + r.output_tokens for r in self.requests)

    def __enter__(self) -> FakeModelServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _pieces(text: str, size: int) -> Iterator[str]:
    for i in range(0, len(text), size):
        yield text[i : i + size]


def _sse(data: dict[str, Any], event: str | None = None) -> str:
    head = f"event: {event}\n" if event else ""
    return f"{head}data: {json.dumps(data)}\n\n"


def _openai_events(reply: Reply, model: str, usage: bool,
                   body: dict[str, Any]) -> Iterator[str]:
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None, **more: Any) -> str:
        return _sse({**base, "choices": [{"index": 0, "delta": delta,
                                          "finish_reason": finish, **more}]})

    yield chunk({"role": "assistant", "content": ""})
    if reply.logprobs is not None and body.get("logprobs"):
        yield from _scored_chunks(reply, chunk, bool(body.get("return_token_ids")))
    else:
        for piece in _pieces(reply.text, reply.chunk_size):
            yield chunk({"content": piece})
    for index, call in enumerate(reply.tool_calls):
        yield chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                     "function": {"name": call["name"], "arguments": ""}}]})
        for piece in _pieces(json.dumps(call["arguments"]), reply.chunk_size):
            yield chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield chunk({}, reply.finish or ("tool_calls" if reply.tool_calls else "stop"))
    if usage:
        yield _sse({**base, "choices": [], "usage": {
            "prompt_tokens": reply.usage[0], "completion_tokens": reply.usage[1],
            "total_tokens": sum(reply.usage), **reply.usage_extra}})
    yield "data: [DONE]\n\n"


def _scored_chunks(reply: Reply, chunk: Callable[..., str], ids: bool) -> Iterator[str]:
    """The reply's text one token a chunk, each with its score (and id, when asked)."""
    assert reply.logprobs is not None
    assert "".join(token for token, _ in reply.logprobs) == reply.text
    for index, (token, logprob) in enumerate(reply.logprobs):
        more: dict[str, Any] = {"logprobs": {"content": [{
            "token": token, "logprob": logprob, "bytes": list(token.encode()),
            "top_logprobs": []}]}}
        if ids and reply.token_ids is not None:
            more["token_ids"] = [reply.token_ids[index]]
        yield chunk({"content": token}, **more)


def _anthropic_events(reply: Reply, model: str) -> Iterator[str]:
    yield _sse({"type": "message_start", "message": {
        "id": "msg_1", "type": "message", "role": "assistant", "model": model, "content": [],
        "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": reply.usage[0], "output_tokens": 0, **reply.usage_extra}}},
        "message_start")
    index = 0
    if reply.text:
        yield _sse({"type": "content_block_start", "index": 0,
                    "content_block": {"type": "text", "text": ""}}, "content_block_start")
        for piece in _pieces(reply.text, reply.chunk_size):
            yield _sse({"type": "content_block_delta", "index": 0,
                        "delta": {"type": "text_delta", "text": piece}}, "content_block_delta")
        yield _sse({"type": "content_block_stop", "index": 0}, "content_block_stop")
        index = 1
    for call in reply.tool_calls:
        yield _sse({"type": "content_block_start", "index": index, "content_block": {
            "type": "tool_use", "id": call["id"], "name": call["name"], "input": {}}},
            "content_block_start")
        for piece in _pieces(json.dumps(call["arguments"]), reply.chunk_size):
            yield _sse({"type": "content_block_delta", "index": index, "delta": {
                "type": "input_json_delta", "partial_json": piece}}, "content_block_delta")
        yield _sse({"type": "content_block_stop", "index": index}, "content_block_stop")
        index += 1
    yield _sse({"type": "message_delta", "delta": {
        "stop_reason": reply.finish or ("tool_use" if reply.tool_calls else "end_turn"),
        "stop_sequence": None},
        "usage": {"output_tokens": reply.usage[1], **reply.usage_extra}}, "message_delta")
    yield _sse({"type": "message_stop"}, "message_stop")
