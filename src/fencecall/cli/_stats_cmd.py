"""``fencecall stats [CONVERSATION...]``: which tools are slow or fail, and what it cost."""

from __future__ import annotations

import argparse
import json
import sys
from decimal import Decimal
from typing import Any

from rich.console import Console
from rich.table import Table

from ..agent import Conversation
from ..agent.stats import Stats, collect
from ..config import load_config
from .visible import visible_text


def run(args: argparse.Namespace) -> int:
    config = load_config()
    names = args.conversations or [info.name for info in Conversation.list_all(config.home)]
    stats = collect((Conversation.open(config.home, name).messages for name in names),
                    lambda model: config.model_settings(model).price)
    if args.json:
        json.dump(as_json(stats, names), sys.stdout, indent=2)
        sys.stdout.write("\n")
        return 0
    show(stats, Console(highlight=False), f"{len(names)} conversation(s)")
    return 0


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f} s"


def _money(value: Decimal | None) -> str:
    return "unknown" if value is None else f"${value:.4f}"


def show(stats: Stats, console: Console, title: str) -> None:
    """The stats as two tables, tools by failures first, then models with their cost."""
    tools = Table(title=visible_text(f"Tools in {title}"), title_justify="left")
    for column in ("tool", "calls", "failures", "denials", "p50", "p95"):
        tools.add_column(column, justify="left" if column == "tool" else "right")
    for name, entry in sorted(stats.tools.items(), key=lambda kv: (-kv[1].failures, kv[0])):
        tools.add_row(visible_text(name), str(entry.calls), str(entry.failures),
                      str(entry.denials), _seconds(entry.percentile(0.5)),
                      _seconds(entry.percentile(0.95)))
    models = Table(title="Models", title_justify="left")
    for column in ("model", "replies", "counted", "estimated", "unmetered", "input",
                   "output", "cache read", "cache write", "cost"):
        models.add_column(column, justify="left" if column == "model" else "right")
    for name, model in sorted(stats.models.items()):
        tokens = model.tokens
        models.add_row(visible_text(name), str(model.replies), str(model.counted),
                       str(model.estimated), str(model.unmetered), str(tokens["input_tokens"]),
                       str(tokens["output_tokens"]), str(tokens["cache_read_tokens"]),
                       str(tokens["cache_write_tokens"]), _money(model.cost))
    console.print(tools)
    console.print(models)
    jobs = stats.jobs
    if jobs.started:
        console.print(f"Background jobs: {jobs.started} started, {jobs.ended} ended by "
                      f"themselves, {jobs.killed} killed, {jobs.stopped} stopped when their "
                      "conversation ended")
    console.print(f"Total cost: {_money(stats.cost)}")
    if any(model.counted or model.estimated for model in stats.models.values()):
        console.print("Counted replies were stopped at their first call (or their stream "
                      "broke) before the provider reported their tokens: fencecall counted "
                      "them with the model's tokenizer; estimated ones, with no tokenizer to "
                      "hand, by an estimate that errs high, so "
                      "their tokens and cost are upper bounds.")
    if any(model.unmetered for model in stats.models.values()):
        console.print("Unmetered replies (logs of release 0.1) have no token count; their "
                      "cost is not known.")


def as_json(stats: Stats, names: list[str]) -> dict[str, Any]:
    def money(value: Decimal | None) -> str | None:
        return None if value is None else str(value)

    return {
        "conversations": names,
        "tools": {name: {"calls": t.calls, "failures": t.failures, "denials": t.denials,
                         "p50_s": t.percentile(0.5), "p95_s": t.percentile(0.95)}
                  for name, t in stats.tools.items()},
        "models": {name: {"replies": m.replies, "counted": m.counted,
                          "estimated": m.estimated, "unmetered": m.unmetered, **m.tokens,
                          "cost_usd": money(m.cost)}
                   for name, m in stats.models.items()},
        "jobs": {"started": stats.jobs.started, "ended": stats.jobs.ended,
                 "killed": stats.jobs.killed, "stopped": stats.jobs.stopped},
        "cost_usd": money(stats.cost),
    }
