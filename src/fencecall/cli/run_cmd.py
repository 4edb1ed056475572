"""``fencecall run REPLY``: execute the tool calls in a saved model reply."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console

from .. import telemetry
from ..config import load_config
from ..message import Message
from .confirm import choose_confirm
from .inputs import read_text
from .options import session_of
from .visible import json_visible, visible_text


def _result_json(message: Message) -> dict[str, Any]:
    return {"tool": message.metadata.get("tool"), "call_id": message.call_id,
            "content": message.content,
            "metadata": {k: v for k, v in message.metadata.items() if k != "tool"}}


def run(args: argparse.Namespace) -> int:
    text = read_text(args.reply)
    console = Console(stderr=args.json, highlight=False)
    config = load_config()
    confirm = choose_confirm(console, yes=args.yes)
    results: list[Message] = []
    with telemetry.using(telemetry.from_settings(config.telemetry,
                                                 content=config.telemetry_content)), \
            session_of(args, config, confirm, args.format) as session:
        for message in session.execute(text):
            results.append(message)
            if not args.json:
                tool = message.metadata.get("tool", "fencecall")
                console.rule(visible_text(str(tool), "bold"), align="left")
                console.print(visible_text(message.content))
    if args.json:
        document = json.dumps([_result_json(m) for m in results], ensure_ascii=False, indent=2)
        sys.stdout.write(json_visible(document) + "\n")
    elif not results:
        console.print("No tool calls found.")
    if any(m.metadata.get("status") == "declined" for m in results) and not args.yes:
        console.print("Some calls needed confirmation and were declined; pass -y to allow them.")
    return 1 if any(m.failed for m in results) else 0
