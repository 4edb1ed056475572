"""A small MCP server for the tests, built on the official SDK, that can misbehave on demand.

Run over stdio (``python flaky_server.py``) or Streamable HTTP (``--http PORT``). Each process
keeps its own counter, so two clients of two processes never share state.
"""

from __future__ import annotations

import base64
import json
import os
import sys
import time
from typing import Any

from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.types import ToolAnnotations

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/PchI7wAAAABJRU5ErkJggg=="
)

server = MCPServer("flaky")
_count = 0


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool(annotations=ToolAnnotations(destructive_hint=True))
def wipe(target: str) -> str:
    """Pretend to delete the target (asks for confirmation)."""
    return f"wiped {target}"


@server.tool()
def count() -> str:
    """Count the calls this server process has had."""
    global _count
    _count += 1
    return f"count={_count} pid={os.getpid()}"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def where() -> str:
    """The folder this server process runs in."""
    return f"cwd={os.getcwd()}"


@server.tool()
def crash() -> str:
    """Exit the process in the middle of the call."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(3)


@server.tool()
def hang(seconds: float = 3600) -> str:
    """Sleep, holding the call."""
    time.sleep(seconds)
    return "woke"


_WIRE = os.fstat(1)
"""The protocol pipe as started; the SDK moves it off fd 1 so that prints cannot reach it."""


def _wire_fd() -> int:
    for fd in range(3, 256):
        try:
            info = os.fstat(fd)
        except OSError:
            continue
        if (info.st_ino, info.st_dev) == (_WIRE.st_ino, _WIRE.st_dev):
            return fd
    return 1


@server.tool()
def garbage() -> str:
    """Write lines that are not JSON-RPC onto the protocol pipe itself, then answer."""
    os.write(_wire_fd(), b"this is not json\n{broken\n")
    return "answered after garbage"


@server.tool(annotations=ToolAnnotations(read_only_hint=True), structured_output=False)
def half_emoji(ctx: Context) -> str:
    """Answer as a server in JavaScript does with an emoji cut in two: its first half, a lone
    surrogate, written as JSON's "\\ud83d". This SDK cannot write one, so the answer goes
    onto the protocol pipe by hand; the SDK's own, after it, answers a call already answered."""
    answer = {"jsonrpc": "2.0", "id": ctx.request_context.request_id, "result": {
        "content": [{"type": "text", "text": "cut \ud83d here"}], "isError": False,
        "resultType": "complete"}}
    os.write(_wire_fd(), (json.dumps(answer) + "\n").encode())
    return "the SDK's own answer"


@server.tool(structured_output=False)
def picture() -> list[Any]:
    """Return text and a PNG image."""
    return ["a red pixel", Image(data=PNG, format="png")]


@server.tool()
def weather(city: str) -> dict[str, Any]:
    """Structured output."""
    return {"city": city, "celsius": 21.5}


@server.tool()
def fail(reason: str) -> str:
    """A tool error: the result has isError set."""
    raise ValueError(reason)


if __name__ == "__main__":
    if "--noisy" in sys.argv:  # a banner on stdout, as careless servers print
        print("flaky server starting up", flush=True)
    if "--http" in sys.argv:
        server.run("streamable-http", port=int(sys.argv[sys.argv.index("--http") + 1]))
    else:
        server.run()
