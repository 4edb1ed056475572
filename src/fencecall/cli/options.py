"""Command-line options shared by the commands that run tools."""

from __future__ import annotations

import argparse
from pathlib import Path

from ..parsing import ToolFormat
from ..tools import Toolchain


def add_tool_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--format", "-f", choices=[f.value for f in ToolFormat],
                        default=ToolFormat.MARKDOWN.value, help="how tool calls are written")
    parser.add_argument("--tools", "-t", metavar="LIST",
                        help="comma-separated allowlist: names, globs (mcp.*), hint:TAG, "
                             "or .py files")
    parser.add_argument("-y", "--yes", action="store_true",
                        help="confirm every tool call without asking")
    parser.add_argument("--workspace", "-w", type=Path, default=None,
                        help="folder the tools work in (default: current folder; created "
                             "if missing)")
    parser.add_argument("--root", action="append", type=Path, default=[],
                        help="another folder file tools may touch (repeatable)")


def workspace_of(args: argparse.Namespace) -> Path:
    workspace: Path = (args.workspace or Path.cwd()).expanduser()
    workspace.mkdir(parents=True, exist_ok=True)
    return workspace.resolve()


def toolchain_of(args: argparse.Namespace, workspace: Path) -> Toolchain:
    allowlist = None
    if args.tools:
        allowlist = [entry.strip() for entry in args.tools.split(",") if entry.strip()]
    return Toolchain.build(allowlist, root=workspace)
