"""Entry point: dispatches to the subcommands and turns expected errors into messages.

It imports only the grammar (:mod:`._arguments`) before the arguments are parsed, so that
``--help``, ``--version`` and a usage error start fast; each command's module, and what it
needs, is imported once the command is known.
"""

from __future__ import annotations

import signal
import sys
from collections.abc import Sequence

from ._arguments import COMMANDS, build_parser


def main(argv: Sequence[str] | None = None) -> int:
    """``fencecall PROMPT`` and a bare ``fencecall`` mean ``fencecall chat``."""
    parser = build_parser()
    arguments = list(sys.argv[1:] if argv is None else argv)
    first = arguments[0] if arguments else None
    if first not in COMMANDS and first not in ("-h", "--help", "--version"):
        arguments.insert(0, "chat")
    args = parser.parse_args(arguments)
    module_name, _, function = args.handler.partition(":")
    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, _exit_cleanly)
    from importlib import import_module

    from ..errors import SignalInterrupt, UserError
    from .visible import visible

    try:
        handler = getattr(import_module(module_name), function)
        code: int = handler(args)
    except UserError as err:
        print(f"fencecall: {visible(str(err))}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as err:
        stopped = err.signum if isinstance(err, SignalInterrupt) else signal.SIGINT
        print("fencecall: interrupted" if stopped == signal.SIGINT
              else f"fencecall: stopped by {signal.Signals(stopped).name}", file=sys.stderr)
        return 128 + stopped
    return code


def _exit_cleanly(signum: int, frame: object) -> None:
    """SIGTERM and SIGHUP end the run as Ctrl-C does: every ``finally`` runs, so the tools'
    processes are killed, temporary folders removed and the log is complete."""
    raise SystemExit(128 + signum)


if __name__ == "__main__":
    sys.exit(main())
