"""The command line's grammar, kept free of heavy imports so ``--help`` starts fast.

Each command names its handler as ``module:function``; the module is imported only when that
command runs.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from .. import __version__
from ..parsing import FORMATS, MARKDOWN

COMMANDS = ("parse", "run", "chat", "list")


def _add_tool_options(parser: argparse.ArgumentParser, default_format: str | None) -> None:
    parser.add_argument("--format", "-f", choices=list(FORMATS), default=default_format,
                        help="how tool calls are written (default: markdown)")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fencecall",
        description="An agent runtime in which a model's plain text is the tool call. "
                    "A bare `fencecall [PROMPT]` means `fencecall chat [PROMPT]`.")
    parser.add_argument("--version", action="version", version=f"fencecall {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    parse = commands.add_parser(
        "parse", help="list the tool calls found in a saved model reply",
        description="List the tool calls found in FILE (a saved model reply; - for stdin).")
    parse.add_argument("file", metavar="FILE")
    parse.add_argument("--format", "-f", choices=list(FORMATS), default=MARKDOWN.name,
                       help="how the calls are written")
    parse.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parse.set_defaults(handler="fencecall.cli.parse_cmd:run")

    run = commands.add_parser(
        "run", help="execute the tool calls in a saved model reply",
        description="Execute the tool calls in REPLY (a saved model reply; - for stdin) and "
                    "print their results. Exits 1 if any call failed, was blocked or declined.")
    run.add_argument("reply", metavar="REPLY")
    run.add_argument("--json", action="store_true", help="print the results as JSON")
    _add_tool_options(run, MARKDOWN.name)
    run.set_defaults(handler="fencecall.cli.run_cmd:run")

    chat = commands.add_parser(
        "chat", help="chat with a model that uses tools (the default command)",
        description="Chat with a model that uses tools. With PROMPT, work on it and exit.")
    chat.add_argument("prompt", nargs="*", help="run non-interactively on this prompt")
    chat.add_argument("--model", "-m", help="provider/name, e.g. openai/gpt-4o or local/qwen")
    chat.add_argument("--name", help="name for a new conversation")
    chat.add_argument("--resume", "-r", metavar="NAME", help="continue a conversation")
    chat.add_argument("--max-steps", type=int, help="tool calls per prompt before stopping")
    _add_tool_options(chat, None)
    chat.set_defaults(handler="fencecall.cli.chat_cmd:run")

    listing = commands.add_parser("list", help="list saved conversations")
    listing.set_defaults(handler="fencecall.cli.chat_cmd:list_conversations")
    return parser
