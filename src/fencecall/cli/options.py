"""Turning the shared command-line options and the configuration into a session."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from ..config import Config
from ..execution import Session
from ..parsing import FormatLike
from ..secrecy import scrub_own_environ
from ..tools import ConfirmFunc, Toolchain
from ..tools.runtime.sandbox import choose_sandbox


def workspace_of(args: argparse.Namespace) -> Path:
    workspace: Path = (args.workspace or Path.cwd()).expanduser()
    workspace.mkdir(parents=True, exist_ok=True)
    return workspace.resolve()


def toolchain_of(args: argparse.Namespace, workspace: Path,
                 default: Sequence[str] | None = None,
                 packages: Sequence[str] = ()) -> Toolchain:
    """The tools ``--tools`` names (comma-separated), else ``default`` (None: all), from the
    built-ins, plugins and the configured tool ``packages``."""
    allowlist = default
    if args.tools:
        allowlist = [entry.strip() for entry in args.tools.split(",") if entry.strip()]
    return Toolchain.build(allowlist, root=workspace, packages=packages)


def session_of(args: argparse.Namespace, config: Config, confirm: ConfirmFunc,
               fmt: FormatLike, tools: Sequence[str] | None = None) -> Session:
    """The session the options and the configuration describe.

    The secrets' values are taken out of this process's environment block first (they stay
    in memory for the providers), so no tool can read them back through ``/proc``. Where the
    sandbox cannot run, the fallback is said once on stderr.
    """
    secrets = config.secret_values(os.environ)
    scrub_own_environ(secrets)
    workspace = workspace_of(args)
    roots = (workspace, *(Path(r).expanduser().resolve() for r in args.root))
    sandbox, warning = choose_sandbox(args.sandbox or config.sandbox, roots,
                                      network=args.network or config.network)
    if warning:
        print(f"fencecall: warning: {warning}", file=sys.stderr)
    return Session(toolchain_of(args, workspace, tools, config.tool_packages),
                   workspace=workspace, confirm=confirm,
                   fmt=fmt, extra_roots=args.root, sandbox=sandbox, pass_env=config.pass_env,
                   secrets=secrets)
