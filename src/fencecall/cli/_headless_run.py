"""``fencecall run REPLY --output-format json|stream-json``: a saved reply's calls run with
their results as JSON events (the same events a model's run writes; no model, no cost), and
a final ``result``. Nobody is asked: ``-y`` confirms every call, else calls that need a yes
are declined. It exits 1 when a call did not do its job, as the text form does."""

from __future__ import annotations

import argparse
import sys
import time
import warnings

from .. import telemetry
from ..agent import CallsFound, ReplyDone, ToolResult
from ..assembly import resolve_settings, tool_session
from ..config import load_config
from ..errors import UserError
from ..execution import auto_no, auto_yes, resolve
from ..message import Message
from ..parsing import parse
from ._headless import show_warning
from ._stream_json import (
    JsonLines,
    RunEvents,
    failure_event,
    init_event,
    say_json,
    unbilled_result,
)
from .options import overrides_of


def run_reply_as_json(args: argparse.Namespace, text: str) -> int:
    started = time.monotonic()
    lines = JsonLines(sys.stdout, streaming=args.output_format == "stream-json")
    warnings.showwarning = show_warning
    try:
        return _run(args, text, lines, started)
    except UserError as err:
        say_json("error")(str(err))
        lines.write(failure_event("error_usage", str(err), 2, started))
        return 2


def _run(args: argparse.Namespace, text: str, lines: JsonLines, started: float) -> int:
    config = load_config()
    settings = resolve_settings(config, overrides_of(args))
    events = RunEvents(lines, lambda model: None)
    results: list[Message] = []
    with telemetry.using(telemetry.from_settings(config.telemetry,
                                                 content=config.telemetry_content)), \
            tool_session(settings, config, confirm=auto_yes if args.yes else auto_no,
                         warn=say_json("warning")) as session:
        events.attach(session.toolchain, None)
        lines.write(init_event(session, None, settings.format.name, yes=args.yes))
        reply = Message("assistant", text)
        parsed = parse(text, settings.format)
        calls = [call for call in parsed.calls if resolve(call, session.toolchain)]
        events(ReplyDone(reply, False))
        events(CallsFound(tuple(calls)))
        for message in session.execute_calls(reply, calls, parsed.diagnostics):
            results.append(message)
            events(ToolResult(message))
    failed = sum(m.failed for m in results)
    ran = sum(m.call is not None for m in results)
    lines.write(unbilled_result("error_during_execution" if failed else "success",
                                f"{ran} call{'s' * (ran != 1)} run, {failed} failed",
                                1 if failed else 0, started,
                                terminal_reason="failed" if failed else "done"))
    return 1 if failed else 0
