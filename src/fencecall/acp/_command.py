"""``fencecall acp``: serve the Agent Client Protocol on stdin and stdout.

Standard output carries JSON-RPC alone: the protocol writes to a private copy of it, and file
descriptor 1 (and ``print``) then points at standard error, so no tool process and no stray
print can write into the stream. At the end of input every session is closed, so the tools'
processes end with fencecall. Standard input or output that the event loop cannot watch (a
regular file, ``/dev/null``) is carried through a pipe by a thread of its own.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import selectors
import sys
import threading
from typing import cast

import acp

from .. import telemetry
from ..assembly.build import own_secrets
from ..config import load_config
from ._server import FencecallAgent

STREAM_LIMIT = 50 * 1024 * 1024
"""The longest JSON-RPC line read (an embedded file, a long history)."""


def run(args: argparse.Namespace) -> int:
    config = load_config()
    secrets = own_secrets(config)
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    protocol = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    pumps: list[threading.Thread] = []
    source = _watchable(sys.stdin.fileno(), pumps, reading=True)
    sink = _watchable(protocol, pumps, reading=False)
    agent = FencecallAgent(args, config, secrets)
    with telemetry.using(telemetry.from_settings(config.telemetry,
                                                 content=config.telemetry_content)):
        try:
            asyncio.run(_serve(agent, source, sink))
        finally:
            agent.close()
            for pump in pumps:
                pump.join(timeout=10)
    return 0


async def _serve(agent: FencecallAgent, source: int, sink: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader),
                                 os.fdopen(source, "rb", 0))
    transport, flow = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                    os.fdopen(sink, "wb", 0))
    writer = asyncio.StreamWriter(transport, flow, reader, loop)
    try:
        # the SDK's Agent protocol lists every method; ours answers the ones it implements,
        # and the connection answers the rest with -32601 (method not found)
        await acp.run_agent(cast("acp.Agent", agent), writer, reader)
    finally:
        writer.close()  # a pump to a file sees the end of its pipe and finishes


def _watchable(fd: int, pumps: list[threading.Thread], *, reading: bool) -> int:
    """``fd`` (a copy) where the event loop can watch it (a pipe, a socket, a terminal), else
    one end of a pipe that a thread, added to ``pumps``, copies from or to ``fd``."""
    with selectors.DefaultSelector() as selector:
        try:
            selector.register(fd, selectors.EVENT_READ if reading else selectors.EVENT_WRITE)
            return os.dup(fd)
        except (OSError, ValueError):
            pass
    out, into = os.pipe()
    source, target = (fd, into) if reading else (out, fd)
    pump = threading.Thread(target=_copy, args=(source, target, into if reading else out),
                            name="acp-pipe", daemon=True)
    pump.start()
    pumps.append(pump)
    return out if reading else into


def _copy(source: int, target: int, own: int) -> None:
    """Copy ``source`` to ``target`` until its end, then close ``own`` (this pump's end of
    the pipe)."""
    try:
        while chunk := os.read(source, 1 << 16):
            view = memoryview(chunk)
            while view:
                view = view[os.write(target, view):]
    except OSError:
        pass
    finally:
        os.close(own)
