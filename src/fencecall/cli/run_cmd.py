"""``fencecall run REPLY``: execute the tool calls in a saved model reply."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from rich.console import Console
from rich.markup import escape

from ..execution import Session
from ..message import Message
from .confirm import choose_confirm
from .inputs import read_text
from .options import toolchain_of, workspace_of


def _result_json(message: Message) -> dict[str, Any]:
    return {"tool": message.metadata.get("tool"), "call_id": message.call_id,
            "content": message.content,
            "metadata": {k: v for k, v in message.metadata.items() if k != "tool"}}


def run(args: argparse.Namespace) -> int:
    text = read_text(args.reply)
    console = Console(stderr=args.json, highlight=False)
    workspace = workspace_of(args)
    toolchain = toolchain_of(args, workspace)
    confirm = choose_confirm(console, yes=args.yes)
    results: list[Message] = []
    with Session(toolchain, workspace=workspace, confirm=confirm, fmt=args.format,
                 extra_roots=args.root) as session:
        for message in session.execute(text):
            results.append(message)
            if not args.json:
                tool = message.metadata.get("tool", "fencecall")
                console.rule(f"[bold]{escape(str(tool))}[/]", align="left")
                console.print(message.content, markup=False)
    if args.json:
        json.dump([_result_json(m) for m in results], sys.stdout, ensure_ascii=False, indent=2)
        sys.stdout.write("\n")
    elif not results:
        console.print("No tool calls found.")
    if any(m.metadata.get("status") == "declined" for m in results) and not args.yes:
        console.print("Some calls needed confirmation and were declined; pass -y to allow them.")
    return 1 if any(m.failed for m in results) else 0
