"""A fake OpenAI-compatible model server for a thousand sessions at once, on one asyncio loop.

``python benchmarks/fast_model_server.py --delay 1`` prints its base URL
(``http://127.0.0.1:PORT/v1``) and serves until its standard input closes (or SIGINT/SIGTERM).
``python -m benchmarks.fast_model_server --check 1000`` starts one and measures its capacity
(see :func:`check`).

``POST /v1/chat/completions`` with ``stream: true`` is answered after a fixed latency
(``--delay``, a ``loop.call_later`` timer, no thread per request) with the events that
``tests/fakeserver.py`` sends: a role chunk, the text in 64-character content deltas, a
``finish_reason`` chunk, a usage chunk when ``stream_options.include_usage`` asks for one,
then ``data: [DONE]``; as a chunked body on a kept-alive HTTP/1.1 connection (as real model
servers do), or with ``--no-keep-alive`` a body ended by closing the connection. Every other
request gets 404 (``GET /v1/models`` included, as the test server without models), except
``GET /bench/stats``: this server's counters as JSON.

The reply is chosen by the conversation's script, named by the request's model (the part
after the last ``/``; see :data:`SCRIPTS`), and by the number of assistant messages in the
request: the n-th reply of the script, its last one once the script is used up. Scripts
``idle`` wait ``--idle`` seconds, not ``--delay``, before their second reply.

To stay cheap at ~1,000 requests a second, a request's JSON is not decoded: the model, the
assistant messages and ``include_usage`` are found with regular expressions over the body,
which is exact for JSON as the SDK writes it (a quote inside a string is always escaped, so
``"role": "assistant"`` cannot occur inside a message's text), and every distinct reply is
encoded once. The server uses only the standard library, so it starts as a plain script.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

SCRIPTS: dict[str, tuple[str, ...]] = {
    "mix": ("```shell\necho hi > a.txt\n```\n",
            "```save b.txt\na line of text from the model\n```\n",
            "```shell\ncat a.txt b.txt\n```\n",
            "Done."),
    "shell": ("```shell\necho hi > a.txt\n```\n",
              "```shell\necho a line of text from the model > b.txt\n```\n",
              "```shell\ncat a.txt b.txt\n```\n",
              "Done."),
    "save": ("```save a.txt\nhi\n```\n",
             "```save b.txt\na line of text from the model\n```\n",
             "```save c.txt\nhi again\n```\n",
             "Done."),
    "idle": ("```shell\necho idle\n```\n", "Done."),
}
"""The replies of each conversation, in order; the default script is ``mix``."""
CHUNK = 64
"""Characters per content delta."""
USAGE = (12, 7)
"""(prompt, completion) tokens each reply reports."""

_MODEL = re.compile(rb'"model"\s*:\s*"((?:[^"\\]|\\.)*)"')
_ASSISTANT = re.compile(rb'"role"\s*:\s*"assistant"')
_USAGE = re.compile(rb'"include_usage"\s*:\s*true')
_NOT_FOUND = (b"HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\n"
              b"Content-Length: 35\r\n\r\n" + b'{"error": {"message": "not found"}}')


def openai_events(text: str, model: str, usage: bool) -> Iterator[str]:
    """The SSE events of one streamed reply, as ``tests/fakeserver.py`` sends them."""
    base = {"id": "chatcmpl-1", "object": "chat.completion.chunk", "created": 0, "model": model}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> str:
        return "data: " + json.dumps({**base, "choices": [
            {"index": 0, "delta": delta, "finish_reason": finish}]}) + "\n\n"

    yield chunk({"role": "assistant", "content": ""})
    for i in range(0, len(text), CHUNK):
        yield chunk({"content": text[i : i + CHUNK]})
    yield chunk({}, "stop")
    if usage:
        yield "data: " + json.dumps({**base, "choices": [], "usage": {
            "prompt_tokens": USAGE[0], "completion_tokens": USAGE[1],
            "total_tokens": sum(USAGE)}}) + "\n\n"
    yield "data: [DONE]\n\n"


@dataclass
class Stats:
    """What the server did since it started (``GET /bench/stats``)."""

    requests: int = 0
    """Chat requests received."""
    replies: int = 0
    """Chat replies sent."""
    dropped: int = 0
    """Chat requests whose client left before the reply was sent."""
    connections: int = 0
    """Connections accepted."""
    open: int = 0
    most_open: int = 0
    waiting: int = 0
    """Chat requests waiting for their latency to pass."""
    most_waiting: int = 0
    body_bytes: int = 0
    """Bytes of chat request bodies received."""
    reused: int = 0
    """Chat requests that came on a connection that had served a request before."""
    other: dict[str, int] = field(default_factory=dict)
    """Other requests, by method and path."""
    cpu_s: float = 0.0
    """This process's CPU seconds (user and system)."""


class Server:
    """The replies, their timers and the counters; :meth:`protocol` makes each connection's
    :class:`Connection`."""

    def __init__(self, delay: float, idle: float, keep_alive: bool = True):
        self.delay, self.idle, self.keep_alive = delay, idle, keep_alive
        self.stats = Stats()
        self._encoded: dict[tuple[str, int, bytes, bool], bytes] = {}

    def protocol(self) -> Connection:
        return Connection(self)

    def reply(self, body: bytes) -> tuple[float, bytes]:
        """The latency and the whole HTTP response to a chat request's body."""
        found = _MODEL.search(body)
        model = found.group(1) if found else b"m"
        script = model.rsplit(b"/", 1)[-1].decode(errors="replace")
        if script not in SCRIPTS:
            script = "mix"
        step = min(len(_ASSISTANT.findall(body)), len(SCRIPTS[script]) - 1)
        usage = _USAGE.search(body) is not None
        key = (script, step, model, usage)
        data = self._encoded.get(key)
        if data is None:
            name = json.loads(b'"' + model + b'"')
            events = [e.encode() for e in openai_events(SCRIPTS[script][step], name, usage)]
            head = (b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                    b"Cache-Control: no-cache\r\n")
            if self.keep_alive:
                data = head + b"Transfer-Encoding: chunked\r\n\r\n" + b"".join(
                    b"%x\r\n%s\r\n" % (len(e), e) for e in events) + b"0\r\n\r\n"
            else:
                data = head + b"Connection: close\r\n\r\n" + b"".join(events)
            if len(self._encoded) < 10_000:
                self._encoded[key] = data
        latency = self.idle if script == "idle" and step >= 1 else self.delay
        return latency, data

    def stats_response(self) -> bytes:
        self.stats.cpu_s = time.process_time()
        payload = json.dumps(asdict(self.stats)).encode()
        return (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                % len(payload)) + payload


class Connection(asyncio.Protocol):
    """One client connection: HTTP/1.1 requests in turn (``Content-Length`` bodies), each
    answered in one write."""

    def __init__(self, server: Server):
        self.server = server
        self.buffer = bytearray()
        self.busy = False
        self.served = 0
        self.timer: asyncio.TimerHandle | None = None
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        stats = self.server.stats
        stats.connections += 1
        stats.open += 1
        stats.most_open = max(stats.most_open, stats.open)

    def connection_lost(self, exc: Exception | None) -> None:
        self.server.stats.open -= 1
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
            self.server.stats.waiting -= 1
            self.server.stats.dropped += 1

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self._next()

    def _next(self) -> None:
        end = self.buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self.buffer) > 65536:
                self._fail()
            return
        lines = bytes(self.buffer[:end]).decode("latin-1").split("\r\n")
        parts = lines[0].split(" ")
        if len(parts) != 3:
            self._fail()
            return
        method, path, version = parts
        length, close = 0, version == "HTTP/1.0"
        for line in lines[1:]:
            name, _, value = line.partition(":")
            name, value = name.strip().lower(), value.strip().lower()
            if name == "content-length":
                length = int(value)
            elif name == "connection":
                close = value == "close"
            elif name == "transfer-encoding":  # no client of ours sends a chunked body
                self._fail()
                return
        if len(self.buffer) < end + 4 + length:
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        self.busy = True
        self.served += 1
        if method == "POST" and path.endswith("/chat/completions"):
            server = self.server
            server.stats.requests += 1
            server.stats.reused += self.served > 1
            server.stats.body_bytes += length
            latency, data = server.reply(body)
            close = close or not server.keep_alive
            server.stats.waiting += 1
            server.stats.most_waiting = max(server.stats.most_waiting, server.stats.waiting)
            self.timer = asyncio.get_running_loop().call_later(latency, self._reply, data, close)
        elif method == "GET" and path == "/bench/stats":
            self._send(self.server.stats_response(), close)
        else:
            other = self.server.stats.other
            other[f"{method} {path}"] = other.get(f"{method} {path}", 0) + 1
            self._send(_NOT_FOUND, close)

    def _reply(self, data: bytes, close: bool) -> None:
        self.timer = None
        self.server.stats.waiting -= 1
        self.server.stats.replies += 1
        self._send(data, close)

    def _send(self, data: bytes, close: bool) -> None:
        assert self.transport is not None
        if self.transport.is_closing():
            return
        self.transport.write(data)
        if close:
            self.transport.close()
            return
        self.busy = False
        if self.buffer:
            self._next()

    def _fail(self) -> None:
        assert self.transport is not None
        self.transport.write(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n"
                             b"Connection: close\r\n\r\n")
        self.transport.close()


async def serve(delay: float, idle: float, keep_alive: bool, port: int = 0) -> None:
    """Serve until standard input closes or a SIGINT/SIGTERM comes."""
    loop = asyncio.get_running_loop()
    server = Server(delay, idle, keep_alive)
    listening = await loop.create_server(server.protocol, "127.0.0.1", port, backlog=4096)
    host, bound = listening.sockets[0].getsockname()[:2]
    print(f"http://{host}:{bound}/v1", flush=True)
    done = asyncio.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, done.set)

    def wait_for_stdin() -> None:
        with contextlib.suppress(Exception):
            sys.stdin.read()
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(done.set)

    threading.Thread(target=wait_for_stdin, daemon=True).start()
    await done.wait()
    listening.close()


def process_cpu(pid: int) -> float:
    """A process's CPU seconds (user and system), from ``/proc/PID/stat``."""
    stat = Path(f"/proc/{pid}/stat").read_text()
    fields = stat[stat.rfind(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def start(delay: float, idle: float = 0.0, keep_alive: bool = True
          ) -> tuple[subprocess.Popen[str], str]:
    """This server in a process of its own: the process (close its stdin to end it) and its
    base URL."""
    args = [sys.executable, str(Path(__file__).resolve()), "--delay", str(delay),
            "--idle", str(idle or delay)]
    if not keep_alive:
        args.append("--no-keep-alive")
    proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    url = proc.stdout.readline().strip()
    if not url.startswith("http"):
        proc.kill()
        raise RuntimeError(f"the fake model server did not start (it said {url!r})")
    return proc, url


def stop(proc: subprocess.Popen[str]) -> None:
    if proc.stdin is not None:
        proc.stdin.close()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def stats(url: str) -> dict[str, Any]:
    """The server's counters (``GET /bench/stats``)."""
    import urllib.request

    with urllib.request.urlopen(url.removesuffix("/v1") + "/bench/stats", timeout=10) as answer:
        found: dict[str, Any] = json.loads(answer.read())
        return found


def check(requests: int, delay: float, rounds: int = 2) -> dict[str, Any]:
    """Capacity: ``requests`` streaming requests at once, in ``rounds`` rounds over the same
    connections (one each), each body carrying 8 KB of system prompt as an agent's does;
    first from ``httpx2`` (the OpenAI SDK's HTTP client) reading the SSE lines, then from raw
    asyncio streams (a client that costs next to nothing, so the wall time is the server's).
    Every reply must come whole. Reports each round's wall time (ideal: ``delay``) and the
    client's CPU, the server's CPU per request and its connections. Then one reply through
    the OpenAI SDK's own stream reader, whose text and usage must come out whole."""
    import openai

    proc, url = start(delay)
    try:
        body = {"model": "bench/mix", "stream": True, "stream_options": {"include_usage": True},
                "max_tokens": 100, "messages": [
                    {"role": "system", "content": "You are a helpful agent. " * 330},
                    {"role": "user", "content": "do the task"}]}
        cpu = process_cpu(proc.pid)
        httpx_rounds = asyncio.run(_httpx_rounds(url, body, requests, rounds))
        raw_rounds = asyncio.run(_raw_rounds(url, body, requests, rounds))
        used = process_cpu(proc.pid) - cpu
        counters = stats(url)
        sdk = openai.OpenAI(base_url=url, api_key="none")
        reply = sdk.chat.completions.create(
            model="bench/mix", messages=[{"role": "user", "content": "x"}], stream=True,
            stream_options={"include_usage": True})
        chunks = list(reply)
        sdk_text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert sdk_text == SCRIPTS["mix"][0], sdk_text
        assert chunks[-1].usage is not None and chunks[-1].usage.total_tokens == sum(USAGE)
    finally:
        stop(proc)
    served = 2 * requests * rounds
    return {"requests at once": requests, "rounds per client": rounds, "delay s": delay,
            "httpx2 rounds (wall s, client CPU s)": httpx_rounds,
            "raw asyncio rounds (wall s, client CPU s)": raw_rounds,
            "server CPU s": round(used, 3),
            "server CPU ms/request": round(1000 * used / served, 3),
            "connections": counters["connections"], "most open": counters["most_open"],
            "dropped": counters["dropped"], "openai SDK stream": "ok"}


async def _httpx_rounds(url: str, body: dict[str, Any], requests: int,
                        rounds: int) -> list[tuple[float, float]]:
    import httpx2

    async def one(client: httpx2.AsyncClient) -> str:
        text, finished = [], False
        async with client.stream("POST", f"{url}/chat/completions", json=body) as answer:
            assert answer.status_code == 200, answer.status_code
            async for line in answer.aiter_lines():
                if line == "data: [DONE]":
                    finished = True
                elif line.startswith("data: "):
                    for choice in json.loads(line[6:])["choices"]:
                        text.append(choice["delta"].get("content") or "")
        assert finished
        return "".join(text)

    limits = httpx2.Limits(max_connections=requests, max_keepalive_connections=requests,
                           keepalive_expiry=60)
    found = []
    async with httpx2.AsyncClient(limits=limits, timeout=60) as client:
        for _ in range(rounds):
            began, cpu = time.perf_counter(), time.process_time()
            texts = await asyncio.gather(*(one(client) for _ in range(requests)))
            found.append((round(time.perf_counter() - began, 3),
                          round(time.process_time() - cpu, 3)))
            assert all(t == SCRIPTS["mix"][0] for t in texts), texts[:2]
    return found


async def _raw_rounds(url: str, body: dict[str, Any], requests: int,
                      rounds: int) -> list[tuple[float, float]]:
    host, port = url.removeprefix("http://").removesuffix("/v1").split(":")
    payload = json.dumps(body).encode()
    request = (b"POST /v1/chat/completions HTTP/1.1\r\nHost: %s\r\n"
               b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
               % (host.encode(), len(payload), payload))
    streams = [await asyncio.open_connection(host, int(port)) for _ in range(requests)]

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> bytes:
        writer.write(request)
        return await reader.readuntil(b"\r\n0\r\n\r\n")

    found = []
    try:
        for _ in range(rounds):
            began, cpu = time.perf_counter(), time.process_time()
            answers = await asyncio.gather(*(one(r, w) for r, w in streams))
            found.append((round(time.perf_counter() - began, 3),
                          round(time.process_time() - cpu, 3)))
            assert all(a.startswith(b"HTTP/1.1 200") and b"data: [DONE]" in a
                       for a in answers)
    finally:
        for _, writer in streams:
            writer.close()
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=1.0, help="seconds before each reply")
    parser.add_argument("--idle", type=float, default=None,
                        help="seconds before the second reply of an idle conversation "
                             "(default: --delay)")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--no-keep-alive", action="store_true",
                        help="end each reply by closing its connection")
    parser.add_argument("--check", type=int, metavar="N", default=0,
                        help="measure a server's capacity with N requests at once, then exit")
    args = parser.parse_args(argv)
    if args.check:
        print(json.dumps(check(args.check, args.delay)))
        return 0
    idle = args.delay if args.idle is None else args.idle
    asyncio.run(serve(args.delay, idle, not args.no_keep_alive, args.port))
    return 0


if __name__ == "__main__":
    sys.exit(main())
