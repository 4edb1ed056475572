"""Entry point: dispatches to the subcommands and turns expected errors into messages."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .. import __version__
from ..agent import ConversationError
from ..config import ConfigError
from ..tools import ToolLoadError, UnknownToolError
from . import chat_cmd, parse_cmd, run_cmd
from .inputs import InputError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fencecall",
        description="An agent runtime in which a model's plain text is the tool call.")
    parser.add_argument("--version", action="version", version=f"fencecall {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    parse_cmd.add_parser(subparsers)
    run_cmd.add_parser(subparsers)
    chat_cmd.add_parser(subparsers)
    return parser


COMMANDS = frozenset({"parse", "run", "chat", "list"})


def main(argv: Sequence[str] | None = None) -> int:
    """``fencecall PROMPT`` and a bare ``fencecall`` mean ``fencecall chat``."""
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    first = arguments[0] if arguments else None
    if first not in COMMANDS and first not in ("-h", "--help", "--version"):
        arguments.insert(0, "chat")
    args = parser.parse_args(arguments)
    try:
        code: int = args.handler(args)
    except (InputError, ToolLoadError, UnknownToolError, ConfigError,
            ConversationError) as err:
        print(f"fencecall: {err}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fencecall: interrupted", file=sys.stderr)
        return 130
    return code


if __name__ == "__main__":
    sys.exit(main())
