"""``fencecall parse FILE``: show the tool calls a saved model reply contains."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict
from typing import Any

from ..parsing import ToolCall, parse
from ._inputs import read_text
from .visible import json_visible, one_line, visible_text


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
    return one_line(call.content or json.dumps(dict(call.kwargs), ensure_ascii=False), width)


def run(args: argparse.Namespace) -> int:
    text = read_text(args.file)
    parsed = parse(text, args.format)
    calls = parsed.calls
    status = 1 if parsed.diagnostics else 0
    if args.json:
        document = json.dumps({"calls": [call_to_json(c, text) for c in calls],
                               "diagnostics": [asdict(d) for d in parsed.diagnostics]},
                              ensure_ascii=False, indent=2)
        sys.stdout.write(json_visible(document) + "\n")
        return status
    from rich.console import Console
    from rich.table import Table

    table = Table(title=visible_text(f"{len(calls)} call(s) in {args.file}"),
                  title_justify="left")
    for column in ("#", "line", "tool", "args", "call id", "content"):
        table.add_column(column, overflow="fold")
    for i, call in enumerate(calls, 1):  # cells are Text: model text is never rich markup
        table.add_row(str(i), str(_line_of(text, call.start)), visible_text(call.name),
                      visible_text(call.argline), visible_text(call.call_id or ""),
                      visible_text(_preview(call)))
    console = Console()
    console.print(table)
    for diagnostic in parsed.diagnostics:
        console.print(visible_text(f"line {diagnostic.line}: {diagnostic.message}", "red"))
    return status
