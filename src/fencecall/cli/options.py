"""Turning the shared command-line options into a workspace and a toolchain."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

from ..tools import Toolchain


def workspace_of(args: argparse.Namespace) -> Path:
    workspace: Path = (args.workspace or Path.cwd()).expanduser()
    workspace.mkdir(parents=True, exist_ok=True)
    return workspace.resolve()


def toolchain_of(args: argparse.Namespace, workspace: Path,
                 default: Sequence[str] | None = None) -> Toolchain:
    """The tools ``--tools`` names (comma-separated), else ``default`` (None: all)."""
    allowlist = default
    if args.tools:
        allowlist = [entry.strip() for entry in args.tools.split(",") if entry.strip()]
    return Toolchain.build(allowlist, root=workspace)
