"""Turning the shared command-line options and the configuration into a session."""

from __future__ import annotations

import argparse
import os
import sys
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..config import Config, check_apart
from ..errors import UserError
from ..execution import Session
from ..parsing import FormatLike
from ..secrecy import scrub_own_environ, tool_environment
from ..tools import ConfirmFunc, Toolchain
from ..tools.mcp import DeclarationError, McpServerConfig, from_command_line
from ..tools.runtime.sandbox import Sandbox, choose_sandbox
from .visible import visible

if TYPE_CHECKING:
    from ..tools.mcp.servers import McpServers


def workspace_of(args: argparse.Namespace) -> Path:
    workspace: Path = (args.workspace or Path.cwd()).expanduser()
    workspace.mkdir(parents=True, exist_ok=True)
    return workspace.resolve()


def allowlist_of(args: argparse.Namespace,
                 default: Sequence[str] | None = None) -> Sequence[str] | None:
    """The tools ``--tools`` names (comma-separated), else ``default`` (None: all)."""
    if args.tools:
        return [entry.strip() for entry in args.tools.split(",") if entry.strip()]
    return default


def mcp_declarations_of(args: argparse.Namespace, config: Config) -> tuple[McpServerConfig, ...]:
    """The configured MCP servers, with those of ``--mcp NAME=COMMAND`` (which replace a
    configured one of the same name)."""
    declared = {server.name: server for server in config.mcp_servers}
    for text in getattr(args, "mcp", None) or ():
        try:
            server = from_command_line(text)
        except DeclarationError as err:
            raise UserError(str(err)) from None
        declared[server.name] = server
    return tuple(declared.values())


def mcp_servers_of(args: argparse.Namespace, config: Config, roots: Sequence[Path],
                   secrets: Iterable[str]) -> McpServers:
    """The declared MCP servers (:func:`mcp_declarations_of`). Their processes get the
    environment tools get, and nothing from ``roots`` (the folders the model may write)."""
    return _servers(mcp_declarations_of(args, config), config, roots, secrets)


def _servers(declared: Sequence[McpServerConfig], config: Config, roots: Sequence[Path],
             secrets: Iterable[str]) -> McpServers:
    from ..tools.mcp.servers import McpServers  # asyncio and the like: only with servers

    env = tool_environment(os.environ, config.pass_env, secret_names=secrets)
    return McpServers(declared, env=env, roots=roots, cache_dir=config.home / "mcp-tools")


def toolchain_of(args: argparse.Namespace, workspace: Path, config: Config,
                 servers: McpServers | None, default: Sequence[str] | None = None
                 ) -> Toolchain:
    """The tools the options select from the built-ins, plugins, the configured tool
    packages and the MCP servers."""
    allowlist = allowlist_of(args, default)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            extra = servers.tools(allowlist) if servers else []
            return Toolchain.build(allowlist, root=workspace, packages=config.tool_packages,
                                   extra=extra)
        finally:  # also before an error: a server that failed to start says why
            for warning in caught:
                print(visible(str(warning.message)), file=sys.stderr)


@dataclass(frozen=True)
class Setting:
    """Where a session runs and what it may not leak: the secrets (by variable name, their
    values now gone from this process's environment block), the workspace, the roots (the
    workspace first) and the sandbox."""

    secrets: dict[str, str]
    workspace: Path
    roots: tuple[Path, ...]
    sandbox: Sandbox


def setting_of(args: argparse.Namespace, config: Config) -> Setting:
    """The secrets' values are taken out of this process's environment block first (they stay
    in memory for the providers), so no tool can read them back through ``/proc``. A
    workspace or ``--root`` that holds fencecall's home or its configuration's folder, or
    lies in one, is refused (see :func:`check_apart`). Where the sandbox cannot run, the
    fallback is said once on stderr."""
    secrets = config.secret_values(os.environ)
    scrub_own_environ(secrets)
    workspace = workspace_of(args)
    extra = tuple(Path(r).expanduser().resolve() for r in args.root)
    check_apart(config, [("the workspace", workspace),
                         *(("the --root folder", root) for root in extra)])
    roots = (workspace, *extra)
    sandbox, warning = choose_sandbox(args.sandbox or config.sandbox, roots,
                                      network=args.network or config.network)
    if warning:
        print(f"fencecall: warning: {warning}", file=sys.stderr)
    return Setting(secrets, workspace, roots, sandbox)


def session_of(args: argparse.Namespace, config: Config, confirm: ConfirmFunc,
               fmt: FormatLike, tools: Sequence[str] | None = None) -> Session:
    """The session the options and the configuration describe (see :func:`setting_of`).
    Without a declared MCP server it has none (``mcp_servers`` None), and the MCP machinery
    is not imported."""
    setting = setting_of(args, config)
    declared = mcp_declarations_of(args, config)
    servers = _servers(declared, config, setting.roots, setting.secrets) if declared else None
    try:
        chain = toolchain_of(args, setting.workspace, config, servers, tools)
    except BaseException:
        if servers is not None:
            servers.close()
        raise
    return Session(chain, workspace=setting.workspace, confirm=confirm, fmt=fmt,
                   extra_roots=setting.roots[1:], sandbox=setting.sandbox,
                   pass_env=config.pass_env,
                   secrets=setting.secrets, mcp_servers=servers)
