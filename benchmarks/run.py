"""The whole benchmark suite, one command: ``python -m benchmarks.run``.

Prints a table per section and writes the numbers to ``benchmarks/results/<time>.json``:
whole-text parse MB/s per format and shape, streaming totals for replies fed in 8-byte chunks,
cold start, tool call overhead, sandbox start and per-call cost, and peak memory for a 10 MB
reply. If gptme is importable in
the same environment, its parsers run on the same inputs and a ratio column shows
fencecall's speed-up (gptme time / fencecall time), next to the number of calls each found
(a parser that gives up is fast but finds nothing). All ratios come from one run.
"""

from __future__ import annotations

import functools
import json
import platform
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fencecall import StreamParser, parse_calls

from . import gptme_adapter, sandbox, tools
from .inputs import SHAPES, SIZES, prose_with_blocks
from .timing import best_seconds, mb_per_s

RESULTS = Path(__file__).parent / "results"
STREAM_CHUNK = 8
GPTME_STREAM_BUDGET = 60.0


def _ratio(theirs: float | None, ours: float) -> float | None:
    return None if theirs is None else theirs / ours


def parse_section() -> list[dict[str, Any]]:
    rows = []
    for fmt, shapes in SHAPES.items():
        theirs_parser = gptme_adapter.whole_parser(fmt)
        for shape, make in shapes.items():
            for label, size in SIZES.items():
                text = make(size)
                ours = best_seconds(functools.partial(parse_calls, text, fmt))
                theirs = (best_seconds(functools.partial(theirs_parser, text), slow=1.0)
                          if theirs_parser else None)
                rows.append({"format": fmt, "shape": shape, "size": label, "bytes": len(text),
                             "fencecall_mb_s": mb_per_s(len(text), ours),
                             "gptme_mb_s": mb_per_s(len(text), theirs) if theirs else None,
                             "speedup": _ratio(theirs, ours),
                             "fencecall_calls": len(parse_calls(text, fmt)),
                             "gptme_calls": theirs_parser(text) if theirs_parser else None})
    return rows


def _stream_ours(text: str) -> int:
    parser = StreamParser()
    found = 0
    for i in range(0, len(text), STREAM_CHUNK):
        found += len(parser.feed(text[i : i + STREAM_CHUNK]))
    return found + len(parser.finish())


def stream_section() -> list[dict[str, Any]]:
    rows = []
    theirs_parser = gptme_adapter.streaming_parser(STREAM_CHUNK)
    previous: tuple[int, float] | None = None
    for size in (20_000, 100_000):
        text = prose_with_blocks(size)
        ours = best_seconds(functools.partial(_stream_ours, text))
        theirs: float | None = None
        estimated = False
        if theirs_parser is not None:
            # gptme re-parses the whole prefix per chunk: cost grows with size squared.
            guess = previous[1] * (size / previous[0]) ** 2 if previous else 0.0
            if guess > GPTME_STREAM_BUDGET:
                theirs, estimated = guess, True
            else:
                start = time.perf_counter()
                theirs_parser(text)
                theirs = time.perf_counter() - start
                previous = (size, theirs)
        rows.append({"reply": f"{size // 1000} KB", "chunk_bytes": STREAM_CHUNK,
                     "fencecall_ms": ours * 1000,
                     "gptme_ms": theirs * 1000 if theirs is not None else None,
                     "gptme_estimated": estimated, "speedup": _ratio(theirs, ours)})
    return rows


def _command_seconds(command: list[str], runs: int = 7) -> float:
    return best_seconds(lambda: subprocess.run(command, capture_output=True, check=True),
                        min_total=0, max_runs=runs)


def cold_start_section() -> list[dict[str, Any]]:
    python = sys.executable
    cases = [("python -c pass (floor)", [python, "-c", "pass"], None),
             ("import the parser", [python, "-c", "import fencecall.parsing"],
              [python, "-c", "import gptme.codeblock"]),
             ("fencecall --help", [shutil.which("fencecall") or "fencecall", "--help"],
              [shutil.which("gptme") or "gptme", "--help"])]
    rows = []
    for name, ours_cmd, theirs_cmd in cases:
        ours = _command_seconds(ours_cmd)
        theirs = (_command_seconds(theirs_cmd, runs=3)
                  if theirs_cmd and gptme_adapter.available() else None)
        rows.append({"case": name, "fencecall_ms": ours * 1000,
                     "gptme_ms": theirs * 1000 if theirs else None,
                     "speedup": _ratio(theirs, ours)})
    return rows


_MEMORY_SCRIPT = """
import json, resource, sys, tracemalloc
from benchmarks.inputs import prose_with_blocks
from benchmarks import gptme_adapter
text = prose_with_blocks(10_000_000)
parse = gptme_adapter.codeblock_parser() if sys.argv[1] == "gptme" else None
if parse is None:
    from fencecall import parse_calls
    parse = parse_calls
tracemalloc.start()
parse(text)
_, peak = tracemalloc.get_traced_memory()
print(json.dumps({"peak_mb": peak / 1e6,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}))
"""


def memory_section() -> list[dict[str, Any]]:
    def run(which: str) -> dict[str, float]:
        out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, which], capture_output=True,
                             text=True, check=True, cwd=Path(__file__).parent.parent)
        result: dict[str, float] = json.loads(out.stdout)
        return result

    ours = run("fencecall")
    theirs = run("gptme") if gptme_adapter.available() else None
    return [{"case": "parse a 10 MB reply (allocations beyond the input)",
             "fencecall_peak_mb": ours["peak_mb"], "fencecall_max_rss_mb": ours["max_rss_mb"],
             "gptme_peak_mb": theirs["peak_mb"] if theirs else None,
             "gptme_max_rss_mb": theirs["max_rss_mb"] if theirs else None}]


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float):
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    return str(value)


def print_table(title: str, rows: list[dict[str, Any]]) -> None:
    columns = [c for c in rows[0] if c != "bytes"]
    cells = [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print(f"\n## {title}\n")
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))


def main() -> None:
    sections = {
        "Whole-text parsing (MB/s; speedup = gptme time / fencecall time; calls found)":
            parse_section(),
        f"Streaming, {STREAM_CHUNK}-byte chunks (total ms)": stream_section(),
        "Cold start (ms, best of several)": cold_start_section(),
        "Tool call overhead (median ms)": tools.measure(),
        "Sandbox start and per-call cost (ms)": sandbox.measure(),
        "Peak memory": memory_section(),
    }
    meta = {"time": datetime.now(UTC).isoformat(), "python": platform.python_version(),
            "machine": platform.machine(), "gptme": gptme_adapter.version()}
    print(f"fencecall benchmarks: Python {meta['python']} on {meta['machine']}; gptme "
          f"{meta['gptme'] or 'not installed (comparison columns empty)'}")
    for title, rows in sections.items():
        print_table(title, rows)
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
    path.write_text(json.dumps({"meta": meta, "sections": sections}, indent=2))
    print(f"\nResults written to {path}")


if __name__ == "__main__":
    main()
