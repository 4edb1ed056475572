"""``fencecall acp``: serve the Agent Client Protocol on stdin and stdout.

Standard output carries JSON-RPC alone: the protocol writes to a private copy of it, and file
descriptor 1 (and ``print``) then points at standard error, so no tool process and no stray
print can write into the stream. At the end of input every session is closed, so the tools'
processes end with fencecall.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
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
    agent = FencecallAgent(args, config, secrets)
    with telemetry.using(telemetry.from_settings(config.telemetry,
                                                 content=config.telemetry_content)):
        try:
            asyncio.run(_serve(agent, protocol))
        finally:
            agent.close()
    return 0


async def _serve(agent: FencecallAgent, protocol: int) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=STREAM_LIMIT)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    transport, flow = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin,
                                                    os.fdopen(protocol, "wb", 0))
    writer = asyncio.StreamWriter(transport, flow, reader, loop)
    # the SDK's Agent protocol lists every method; ours answers the ones it implements, and
    # the connection answers the rest with -32601 (method not found)
    await acp.run_agent(cast("acp.Agent", agent), writer, reader)
