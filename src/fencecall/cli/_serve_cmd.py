"""``fencecall mcp serve``: the toolchain as an MCP server, over stdio or Streamable HTTP;
with ``--env container:IMAGE`` each client's tools run in a container of their own."""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from .. import assembly
from ..assembly import resolve_settings
from ..config import load_config
from ..errors import UserError
from ..execution import Session
from ..execution.confirm_policy import auto_no, auto_yes
from ..serve import ToolServer, serve_http, serve_stdio
from ..tools import ConfirmFunc
from .options import overrides_of
from .visible import warn


def run(args: argparse.Namespace) -> int:
    config = load_config()
    token = _token(args)
    address = _address(args.http) if args.http else None
    settings = resolve_settings(config, overrides_of(args))
    env = assembly.environment(settings, config, assembly.own_secrets(config), warn=warn)
    servers = assembly.mcp_servers(env, config)
    with servers or contextlib.nullcontext():
        chain = assembly.toolchain(settings, config, servers, warn=warn)

        def make_session(confirm: ConfirmFunc) -> Session:
            """A client's session, in a container of its own where ``--env`` names one
            (removed with the session)."""
            place = assembly.start_environment(settings)
            try:
                return assembly.session(env, config, chain, confirm=confirm,
                                        environment=place,
                                        owns_environment=place is not None)
            except BaseException:
                if place is not None:
                    place.close()
                raise

        tool_server = ToolServer(chain, make_session, fallback=auto_yes if args.yes else auto_no,
                                 one_client=address is None)
        if address is None:
            serve_stdio(tool_server)
            return 0
        host, port = address
        shown = f"[{host}]" if ":" in host else host

        def ready(bound: int) -> None:
            print(f"fencecall: serving {len(chain.tools)} tools at http://{shown}:{bound}/mcp",
                  file=sys.stderr, flush=True)

        serve_http(tool_server, host, port, token, ready=ready)
    return 0


def _token(args: argparse.Namespace) -> str | None:
    if args.token_env is None:
        return None
    if args.http is None:
        raise UserError("--token-env applies to --http only (stdio has no requests to check)")
    token = os.environ.get(args.token_env)
    if not token:
        raise UserError(f"--token-env {args.token_env}: that variable is not set or empty")
    return token


def _address(text: str) -> tuple[str, int]:
    """``HOST:PORT``, ``[V6]:PORT`` or a bare ``PORT`` (127.0.0.1)."""
    host, sep, port = text.rpartition(":")
    if not sep:
        host, port = "127.0.0.1", text
    host = host.strip("[]") or "127.0.0.1"
    if not port.isdigit() or not 0 <= int(port) <= 65535:
        raise UserError(f"--http {text!r}: write HOST:PORT or PORT")
    return host, int(port)
