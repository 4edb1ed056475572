"""``fencecall run REPLY``: execute the tool calls in a saved model reply (as JSON events
with ``--output-format``: see :mod:`._headless_run`).

It exits 1 when a call did not do its job: it failed, was blocked or declined, could not be
read, or called a tool this run did not load (each such block is answered in its place).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from .. import telemetry
from ..assembly import resolve_settings, tool_session
from ..config import load_config
from ..log_records import to_record
from ..message import CannotRun, Message, Status
from ._inputs import read_text
from .options import overrides_of
from .visible import json_visible, visible_text, warn


def _result_json(message: Message) -> dict[str, Any]:
    metadata = to_record(message).get("metadata", {})
    return {"tool": message.tool, "call_id": message.call_id, "content": message.content,
            "metadata": {k: v for k, v in metadata.items() if k != "tool"}}


def run(args: argparse.Namespace) -> int:
    text = read_text(args.reply)
    if args.output_format != "text":
        from ._headless_run import run_reply_as_json

        return run_reply_as_json(args, text)
    from rich.console import Console  # JSON events need no terminal rendering

    from .confirm_prompt import choose_confirm

    console = Console(stderr=args.json, highlight=False)
    config = load_config()
    confirm = choose_confirm(console, yes=args.yes)
    results: list[Message] = []
    settings = resolve_settings(config, overrides_of(args))
    with telemetry.using(telemetry.from_settings(config.telemetry,
                                                 content=config.telemetry_content)), \
            tool_session(settings, config, confirm=confirm, warn=warn) as session:
        for message in session.execute(text, settings.format):
            results.append(message)
            if not args.json:
                tool = message.tool or "fencecall"
                console.rule(visible_text(str(tool), "bold"), align="left")
                console.print(visible_text(message.content))
    if args.json:
        document = json.dumps([_result_json(m) for m in results], ensure_ascii=False, indent=2)
        sys.stdout.write(json_visible(document) + "\n")
    elif not results:
        console.print("No tool calls found.")
    if any(m.status is Status.DECLINED for m in results) and not args.yes:
        console.print("Some calls needed confirmation and were declined; pass -y to allow them.")
    unloaded = sorted({tool for m in results if isinstance(m.note, CannotRun)
                       for tool in m.note.unloaded})
    if unloaded:
        console.print(visible_text(f"Not run: calls of tools this run did not load "
                                   f"({', '.join(unloaded)}); name them in --tools to run them."))
    return 1 if any(m.failed for m in results) else 0
