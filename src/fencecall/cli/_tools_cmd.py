"""``fencecall tools``: the toolchain a session would get, and why a known tool is missing."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Iterator, Sequence

from rich.console import Console
from rich.table import Table

from .. import assembly
from ..assembly import resolve_settings
from ..config import load_config
from ..tools import Hint, Toolchain, ToolSpec, builtin_tools, plugin_tools
from ..tools.loading import package_tools
from ..tools.mcp.servers import McpServers, ServerState
from ..tools.spec import server_hint
from .options import overrides_of
from .visible import visible_text, warn


def run(args: argparse.Namespace) -> int:
    config = load_config()
    settings = resolve_settings(config, overrides_of(args))
    # piped output is for reading by programs and grep: one line per tool, never wrapped
    console = Console(highlight=False, width=None if sys.stdout.isatty() else 10_000)
    env = assembly.environment(settings, config, config.secret_values(os.environ), warn=warn)
    with assembly.mcp_servers(env, config) or McpServers((), env={}) as servers:
        chain = assembly.toolchain(settings, config, servers, warn=warn)
        allowlist = settings.tools
        # the tags the "from" column says already
        sources = {Hint.MCP, *(server_hint(state.config.name) for state in servers.states)}
        table = Table("tool", "from", "hints", "loaded", box=None, pad_edge=False)
        for spec, source, reason in _rows(chain, servers, config.tool_packages, allowlist):
            hints = ", ".join(sorted(spec.hints - sources))
            table.add_row(visible_text(spec.name), visible_text(source), hints,
                          visible_text(reason or "yes"))
        console.print(table)
        if servers:
            console.print()
            for line in server_lines(servers):
                console.print(visible_text(line))
    return 0


def _rows(chain: Toolchain, servers: McpServers, packages: Sequence[str],
          allowlist: Sequence[str] | None) -> Iterator[tuple[ToolSpec, str, str | None]]:
    """Each tool known here: where it comes from, and why it is not loaded (None if it is)."""
    sources: list[tuple[str, list[ToolSpec]]] = [
        ("built-in", list(builtin_tools())), ("plugin", plugin_tools()),
        ("package", package_tools(packages)),
        *((f"mcp server {state.config.name}", list(state.tools)) for state in servers.states)]
    seen: set[str] = set()
    for source, specs in sources:
        for spec in specs:
            if spec.name in seen:
                continue
            seen.add(spec.name)
            yield spec, source, None if chain.get(spec.name) is spec or spec.name in \
                chain.names() else _why_missing(spec, allowlist)


def _why_missing(spec: ToolSpec, allowlist: Sequence[str] | None) -> str:
    if not spec.is_available():
        return "no: not available here"
    if spec.disabled_by_default and (allowlist is None or spec.name not in allowlist):
        return "no: off by default; name it in --tools"
    return "no: not in the tool allowlist"


def server_lines(servers: McpServers) -> Iterator[str]:
    """One line per declared MCP server: how it is reached and its state."""
    for state in servers.states:
        if state.error is not None:  # it names the server and how it is reached
            yield state.error
            continue
        yield f"mcp server {state.config.name} ({state.config.transport}: " \
              f"{state.config.describe()}): {_state(state)}"


def _state(state: ServerState) -> str:
    if state.listed_from is None:
        return "not started (the tool allowlist selects none of its tools)"
    parts = [f"{len(state.tools)} tools (listed from "
             f"{'the cache' if state.listed_from == 'cache' else 'the server'})"]
    parts.append(f"{state.sessions} session(s) connected")
    if state.restarts:
        parts.append(f"restarted {state.restarts} time(s)")
    if state.stray_lines:
        parts.append(f"{state.stray_lines} stray stdout line(s) ignored")
    return ", ".join(parts)
