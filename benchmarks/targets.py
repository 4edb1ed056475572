"""The parser's speed targets (issue 15), judged from the rows one run of the suite measured.

Each target gives what was measured in this run and whether it is met; a target whose rows
were not measured (no gptme in this environment, a section left out) says so instead of
guessing. Nothing here times anything: it only reads rows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

Row = dict[str, Any]
Rows = dict[str, list[Row]]
"""Rows by the name of the function that measured them (``parse_rows``, ``stream_rows``...)."""


def _pick(rows: Iterable[Row], **match: str) -> list[Row]:
    return [row for row in rows if all(row.get(key) == value for key, value in match.items())]


def _numbers(rows: Iterable[Row], column: str) -> list[float]:
    return [row[column] for row in rows if isinstance(row.get(column), int | float)]


def _span(values: list[float], unit: str = "x") -> str:
    low, high = min(values), max(values)
    return f"{low:.2f}{unit}" if f"{low:.2f}" == f"{high:.2f}" else \
        f"{low:.2f}{unit}-{high:.2f}{unit}"


def _judge(target: str, values: list[float], good: Callable[[float], bool],
           unmeasured: str, unit: str = "x", note: str = "") -> Row:
    if not values:
        return {"target": target, "measured": unmeasured, "met": None}
    measured = _span(values, unit) + (f" ({note})" if note else "")
    return {"target": target, "measured": measured,
            "met": "yes" if all(good(v) for v in values) else "no"}


def rows(measured: Rows) -> list[Row]:
    """One row per target: what it asks, what this run measured, and whether it is met."""
    parse = measured.get("parse_rows", [])
    stream = measured.get("stream_rows", [])
    memory = measured.get("memory_rows", [])
    realistic = _pick(parse, format="markdown", shape="realistic reply", size="1 MB")
    no_gptme = "not measured (gptme is not installed)"
    out = [
        _judge("realistic reply, 1 MB: at least 0.5x the speed of the floor",
               _numbers(realistic, "fc/floor"), lambda v: v >= 0.5, "not measured"),
        _judge("realistic reply, 1 MB: at least 10x gptme",
               _numbers(realistic, "speedup"), lambda v: v >= 10, no_gptme),
        _judge("back-to-back tiny blocks: at least 5x gptme at every size",
               _numbers(_pick(parse, format="markdown", shape="many small blocks"), "speedup"),
               lambda v: v >= 5, no_gptme),
    ]
    for fmt in ("xml", "tool"):
        rows_of = _pick(parse, format=fmt)
        same = _numbers(rows_of, "speedup")
        differ = sum(row.get("speedup") == "differs" for row in rows_of)
        out.append(_judge(f"{fmt} calls: at least 5x gptme where both find the same calls",
                          same, lambda v: v >= 5, no_gptme,
                          note=f"{len(same)} rows; {differ} rows find different calls"
                          if differ else f"{len(same)} rows"))
    realistic_stream = _pick(stream, format="markdown", shape="realistic reply")
    out.append(_judge("streaming a realistic reply in 8-character chunks: at most 2x the floor",
                      _numbers(realistic_stream, "fc/floor"), lambda v: v <= 2, "not measured"))
    doubled = _numbers(stream, "x time for 2x text")
    floor_doubled = _numbers(stream, "floor x for 2x text")
    out.append(_judge("streaming, every shape: 2x the text in at most 2.2x the time",
                      doubled, lambda v: v <= 2.2, "not measured",
                      note=f"the floor itself {_span(floor_doubled)}" if floor_doubled else ""))
    ours = [row for row in memory if str(row.get("case", "")).startswith("fencecall")]
    out.append(_judge("peak memory for a 10 MB reply: at most 2x its size",
                      _numbers(ours, "peak / reply size"), lambda v: v <= 2, "not measured"))
    return out
