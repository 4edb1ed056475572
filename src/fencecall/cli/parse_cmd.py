"""``fencecall parse FILE``: show the tool calls a saved model reply contains."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from ..parsing import ToolCall, parse_calls
from .inputs import read_text


def _line_of(text: str, offset: int) -> int:
    return text.count("\n", 0, offset) + 1


def call_to_json(call: ToolCall, text: str) -> dict[str, Any]:
    return {
        "name": call.name,
        "args": list(call.args),
        "argline": call.argline,
        "content": call.content,
        "kwargs": dict(call.kwargs),
        "call_id": call.call_id,
        "format": call.format,
        "start": call.start,
        "line": _line_of(text, call.start),
    }


def _preview(call: ToolCall, width: int = 60) -> str:
    text = call.content or json.dumps(dict(call.kwargs), ensure_ascii=False)
    first = text.splitlines()[0] if text else ""
    more = text.count("\n")
    shown = first if len(first) <= width else first[: width - 1] + "…"
    return shown + (f"  (+{more} lines)" if more else "")


def run(args: argparse.Namespace) -> int:
    text = read_text(args.file)
    calls = parse_calls(text, args.format)
    if args.json:
        json.dump([call_to_json(c, text) for c in calls], sys.stdout, ensure_ascii=False,
                  indent=2)
        sys.stdout.write("\n")
        return 0
    from rich.console import Console
    from rich.table import Table

    table = Table(title=f"{len(calls)} call(s) in {args.file}", title_justify="left")
    for column in ("#", "line", "tool", "args", "call id", "content"):
        table.add_column(column, overflow="fold")
    for i, call in enumerate(calls, 1):
        table.add_row(str(i), str(_line_of(text, call.start)), call.name, call.argline,
                      call.call_id or "", _preview(call))
    Console().print(table)
    return 0
