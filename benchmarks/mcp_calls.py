"""Per-call overhead of an MCP tool against a built-in one: ``python -m benchmarks.mcp_calls``.

Three ways to answer the same small call, each timed over the same number of calls after a
warm-up, median and min per call:

- ``built-in read``: fencecall's own read tool through the whole pipeline (no process);
- ``MCP SDK alone``: the official client calling a stdio echo server directly (the floor);
- ``fencecall MCP tool``: the same server's tool through fencecall's pipeline (parse-free
  named call, argument binding and schema check, hooks, the thread bridge to the SDK).

The overhead fencecall adds to an MCP call is the last row minus the middle one.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from fencecall.execution import Session
from fencecall.execution.confirm_policy import auto_yes
from fencecall.message import Message
from fencecall.parsing import ToolCall
from fencecall.tools import Toolchain
from fencecall.tools.mcp import McpServerConfig, McpServers

SERVER = Path(__file__).with_name("mcp_echo_server.py")
CALLS = 200
WARMUP = 20


def _timed(call: Callable[[], object]) -> tuple[float, float]:
    for _ in range(WARMUP):
        call()
    samples = []
    for _ in range(CALLS):
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return statistics.median(samples), min(samples)


def _pipeline(session: Session, name: str, kwargs: dict[str, str]) -> Callable[[], object]:
    message = Message("assistant", "")
    call = ToolCall(name, kwargs=kwargs, format="tool")

    def run() -> object:
        results = list(session.execute_calls(message, [call]))
        assert results and not results[-1].failed, results
        return results

    return run


def sdk_alone() -> tuple[float, float]:
    from mcp import Client, StdioServerParameters

    async def main() -> tuple[float, float]:
        params = StdioServerParameters(command=sys.executable, args=[str(SERVER)])
        async with Client(params) as client:
            samples: list[float] = []
            for index in range(WARMUP + CALLS):
                started = time.perf_counter()
                await client.call_tool("echo", {"text": "hello"})
                if index >= WARMUP:
                    samples.append(time.perf_counter() - started)
            return statistics.median(samples), min(samples)

    return anyio.run(main)


def measure() -> list[tuple[str, float, float]]:
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder)
        (workspace / "note.txt").write_text("hello\n")
        config = McpServerConfig("bench", command=sys.executable, args=(str(SERVER),))
        with McpServers([config], env={"PATH": "/usr/bin:/bin"}, roots=[workspace]) as servers:
            chain = Toolchain.build(["read", "bench.echo"], extra=servers.tools(None))
            with Session(chain, workspace=workspace, confirm=auto_yes, sandbox="off") as session:
                rows.append(("built-in read", *_timed(_pipeline(
                    session, "read", {"path": "note.txt"}))))
                rows.append(("MCP SDK alone (floor)", *sdk_alone()))
                rows.append(("fencecall MCP tool", *_timed(_pipeline(
                    session, "bench.echo", {"text": "hello"}))))
    return rows


def main() -> None:
    rows = measure()
    print(f"MCP per-call cost, {CALLS} calls after {WARMUP} warm-up, stdio echo server")
    print(f"{'path':<24}{'median ms':>12}{'min ms':>10}")
    for name, median, least in rows:
        print(f"{name:<24}{median * 1000:>12.3f}{least * 1000:>10.3f}")
    floor, ours = rows[1][1], rows[2][1]
    print(f"fencecall adds {(ours - floor) * 1000:.3f} ms per MCP call (median over median)")


if __name__ == "__main__":
    main()
