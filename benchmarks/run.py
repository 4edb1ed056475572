"""The whole benchmark suite, one command: ``python -m benchmarks.run``.

One table per section, each printed as soon as it is measured, and every row written at once
to ``benchmarks/results/<time>.json`` (a crash keeps what was measured). Sections: whole-text
parsing per format and input shape, beside a bare line pass over the same text (the floor);
streaming in 8-character chunks, beside a minimal incremental consumer (the streaming floor)
and at two sizes (linearity); streaming the way gptme's chat loop does; cold start; tool call
overhead; sandbox cost; peak memory for a 10 MB reply. Last, the parser's targets, each with
what this run measured and whether it is met (:mod:`benchmarks.targets`).

Every comparison is timed in one run with :func:`benchmarks.timing.compare`: a warm-up, then
the cases in turn, the same number of runs each, median and best. If gptme is importable
(see the README for the comparison environment), its parsers and tools run on the same
inputs; a speed-up is printed only where both parsers found the same calls, and "differs"
where they did not.
"""

from __future__ import annotations

import functools
import json
import platform
import subprocess
import sys
from collections.abc import Callable, Iterable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fencecall import StreamParser
from fencecall.parsing import _compiled as compiled
from fencecall.parsing import parse_calls

from . import gptme_adapter, sandbox, targets, tools
from .inputs import SHAPES, SIZES, reply_ending_in_a_call
from .timing import Timing, compare, mb_per_s

RESULTS = Path(__file__).parent / "results"
STREAM_CHUNK = 8
STREAM_SHAPES = [("markdown", "realistic reply"), ("markdown", "many small blocks"),
                 ("markdown", "nested fences"), ("xml", "prose+calls"),
                 ("xml", "one call, many CDATA"), ("tool", "prose+calls")]
STREAM_SIZES = {"100 KB": 100_000, "200 KB": 200_000}
CHAT_LOOP_SIZES = {"10 KB": 10_000, "20 KB": 20_000}
RUNNABLE = frozenset({"shell", "ipython", "python", "save", "patch"})
Row = dict[str, Any]


class Results:
    """Rows by section, written to one JSON file after every row."""

    def __init__(self, meta: dict[str, Any], path: Path | None = None):
        self.path = path or RESULTS / f"{datetime.now(UTC):%Y%m%dT%H%M%SZ}.json"
        self.data: dict[str, Any] = {"meta": meta, "sections": {}}

    def add(self, section: str, row: Row) -> None:
        self.data["sections"].setdefault(section, []).append(row)
        self.path.parent.mkdir(exist_ok=True)
        self.path.write_text(json.dumps(self.data, indent=2))


def line_pass(text: str) -> None:
    """The floor of whole-text parsing: a bare pass over the lines."""
    for _line in text.splitlines():
        pass


class MinimalConsumer:
    """The floor of streaming: the same ``feed`` interface, and all it does is keep each
    chunk and, at a newline, join what it holds."""

    def __init__(self) -> None:
        self._pending: list[str] = []

    def feed(self, chunk: str) -> list[object]:
        self._pending.append(chunk)
        if "\n" in chunk:
            "".join(self._pending)
            self._pending = []
        return []


def chunks_of(text: str, size: int = STREAM_CHUNK) -> list[str]:
    return [text[i : i + size] for i in range(0, len(text), size)]


def drive(feed: Callable[[str], list[Any]], chunks: list[str]) -> int:
    """Feed every chunk and count what comes back: the loop around any incremental parser,
    the same for the floor and for fencecall."""
    found = 0
    for chunk in chunks:
        found += len(feed(chunk))
    return found


def stream_floor(chunks: list[str]) -> int:
    return drive(MinimalConsumer().feed, chunks)


def stream_ours(chunks: list[str], fmt: str) -> int:
    parser = StreamParser(fmt)
    return drive(parser.feed, chunks) + len(parser.finish())


def until_first_call(chunks: list[str], fmt: str = "markdown") -> int:
    """What fencecall's agent loop does: feed chunks until the first call of a tool (or the
    end of the reply completes it). Returns how much was fed; -1 if no call came."""
    parser = StreamParser(fmt)
    fed = 0
    for chunk in chunks:
        fed += len(chunk)
        if any(call.name in RUNNABLE for call in parser.feed(chunk)):
            return fed
    return fed if any(call.name in RUNNABLE for call in parser.finish()) else -1


def _ms(t: Timing | None) -> tuple[float | None, float | None]:
    return (t.median * 1000, t.min * 1000) if t else (None, None)


def parse_rows(sizes: dict[str, int] = SIZES, budget: float = 2.0) -> Iterator[Row]:
    for fmt, shapes in SHAPES.items():
        theirs = gptme_adapter.whole_parser(fmt)
        for shape, make in shapes.items():
            for label, size in sizes.items():
                text = make(size)
                cases: dict[str, Callable[[], object]] = {
                    "floor": functools.partial(line_pass, text),
                    "fencecall": functools.partial(parse_calls, text, fmt)}
                if theirs:
                    cases["gptme"] = functools.partial(theirs, text)
                t = compare(cases, budget=budget)
                ours_calls = parse_calls(text, fmt)
                row: Row = {"format": fmt, "shape": shape, "size": label, "runs": t["floor"].runs,
                            "floor MB/s": mb_per_s(len(text), t["floor"].median)}
                for name in ("fencecall", "gptme"):
                    timing = t.get(name)
                    row[f"{name} MB/s"] = mb_per_s(len(text), timing.median) if timing else None
                    row[f"{name} best"] = mb_per_s(len(text), timing.min) if timing else None
                row["fc/floor"] = t["floor"].median / t["fencecall"].median
                row["fc us/call"] = t["fencecall"].median / max(1, len(ours_calls)) * 1e6
                row["fc calls"] = len(ours_calls)
                row["gptme calls"] = None
                row["speedup"] = None
                if theirs:
                    their_calls = theirs(text)
                    same = gptme_adapter.keys(their_calls) == [
                        gptme_adapter.call_key(c.content, c.kwargs) for c in ours_calls]
                    row["gptme calls"] = len(their_calls)
                    row["speedup"] = (t["gptme"].median / t["fencecall"].median if same
                                      else "differs")
                yield row


def stream_rows(sizes: dict[str, int] = STREAM_SIZES, budget: float = 4.0) -> Iterator[Row]:
    """Each shape at every size in one comparison (rounds that take every case in turn), so
    the time for twice the text is a ratio of the same rounds, not of two moments of a
    machine whose speed drifts."""
    for fmt, shape in STREAM_SHAPES:
        cases: dict[str, Callable[[], object]] = {}
        for label, size in sizes.items():
            text = SHAPES[fmt][shape](size)
            chunks = chunks_of(text)
            assert stream_ours(chunks, fmt) == len(parse_calls(text, fmt))
            cases[f"floor {label}"] = functools.partial(stream_floor, chunks)
            cases[f"fencecall {label}"] = functools.partial(stream_ours, chunks, fmt)
            cases[f"whole text {label}"] = functools.partial(parse_calls, text, fmt)
        t = compare(cases, budget=budget)
        previous: float | None = None
        previous_floor: float | None = None
        for label in sizes:
            ours, floor = t[f"fencecall {label}"], t[f"floor {label}"]
            whole = t[f"whole text {label}"]
            yield {"format": fmt, "shape": shape, "size": label, "runs": floor.runs,
                   "floor ms": floor.median * 1000, "fencecall ms": ours.median * 1000,
                   "fencecall best": ours.min * 1000,
                   "fc/floor": ours.median / floor.median,
                   "whole-text ms": whole.median * 1000,
                   "stream/whole": ours.median / whole.median,
                   "x time for 2x text": ours.median / previous if previous else None,
                   "floor x for 2x text": (floor.median / previous_floor if previous_floor
                                           else None)}
            previous, previous_floor = ours.median, floor.median


def chat_loop_rows(sizes: dict[str, int] = CHAT_LOOP_SIZES,
                   budget: float = 10.0) -> Iterator[Row]:
    """Streaming until the first runnable call, as each chat loop does (gptme only)."""
    loop = gptme_adapter.chat_loop_stream()
    per_chunk = gptme_adapter.per_chunk_stream(STREAM_CHUNK)
    for label, size in sizes.items():
        text = reply_ending_in_a_call(size)
        chunks = chunks_of(text)
        cases: dict[str, Callable[[], object]] = {
            "fencecall": functools.partial(until_first_call, chunks)}
        if loop and per_chunk:
            cases["gptme chat loop"] = functools.partial(loop, text)
            cases["gptme per chunk"] = functools.partial(per_chunk, text)
        t = compare(cases, budget=budget, max_runs=5)
        ours = t["fencecall"]
        row: Row = {"reply": label, "runs": ours.runs}
        for name, timing in t.items():
            row[f"{name} ms"], row[f"{name} best"] = _ms(timing)
        for name in ("gptme chat loop", "gptme per chunk"):
            row[f"speedup vs {name}"] = t[name].median / ours.median if name in t else None
        yield row


def _executable(name: str) -> str:
    """``name`` from the running interpreter's environment (which need not be on PATH)."""
    return str(Path(sys.executable).parent / name)


def _command(argv: list[str]) -> Callable[[], object]:
    return functools.partial(subprocess.run, argv, capture_output=True, check=True)


def cold_start_rows() -> Iterator[Row]:
    python = sys.executable
    cases = [("python -c pass (floor)", [python, "-c", "pass"], None),
             ("import the parser", [python, "-c", "import fencecall.parsing"],
              [python, "-c", "import gptme.tools.base"]),
             ("--help", [_executable("fencecall"), "--help"], [_executable("gptme"), "--help"])]
    for name, ours_cmd, theirs_cmd in cases:
        commands = {"fencecall": _command(ours_cmd)}
        if theirs_cmd and gptme_adapter.available():
            commands["gptme"] = _command(theirs_cmd)
        t = compare(commands, budget=5.0, max_runs=10)
        row: Row = {"case": name, "runs": t["fencecall"].runs}
        for parser in ("fencecall", "gptme"):
            row[f"{parser} ms"], row[f"{parser} best"] = _ms(t.get(parser))
        row["speedup"] = t["gptme"].median / t["fencecall"].median if "gptme" in t else None
        yield row


_MEMORY_SCRIPT = """
import json, resource, sys, tracemalloc
from benchmarks.inputs import realistic_reply
from benchmarks import gptme_adapter
text = realistic_reply(10_000_000)
parse = gptme_adapter.whole_parser("markdown") if sys.argv[1] == "gptme" else None
if parse is None:
    from fencecall.parsing import parse_calls
    parse = parse_calls
tracemalloc.start()
parse(text)
_, peak = tracemalloc.get_traced_memory()
print(json.dumps({"size_mb": len(text) / 1e6, "peak_mb": peak / 1e6,
                  "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e3}))
"""


def memory_rows() -> Iterator[Row]:
    def run(which: str) -> dict[str, float]:
        out = subprocess.run([sys.executable, "-c", _MEMORY_SCRIPT, which], capture_output=True,
                             text=True, check=True, cwd=Path(__file__).parent.parent)
        result: dict[str, float] = json.loads(out.stdout.strip().splitlines()[-1])
        return result

    parsers = ["fencecall"] + (["gptme"] if gptme_adapter.available() else [])
    for parser in parsers:
        r = run(parser)
        yield {"case": f"{parser}: parse a 10 MB realistic reply", "reply MB": r["size_mb"],
               "peak MB beyond the reply": r["peak_mb"],
               "peak / reply size": r["peak_mb"] / r["size_mb"], "max RSS MB": r["max_rss_mb"]}


def _cell(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else ""
    if isinstance(value, float):
        return f"{value:.2f}" if value < 100 else f"{value:.0f}"
    return str(value)


def print_table(title: str, rows: list[Row]) -> None:
    columns = [c for c in rows[0] if c != "bytes"]
    cells = [[_cell(row[c]) for c in columns] for row in rows]
    widths = [max(len(c), *(len(r[i]) for r in cells)) for i, c in enumerate(columns)]
    print(f"\n## {title}\n")
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths, strict=True)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths, strict=True)))
    sys.stdout.flush()


def sections() -> dict[str, Callable[[], Iterable[Row]]]:
    return {
        "Whole-text parsing (MB/s, median and best; floor: a bare line pass over the same "
        "text; speedup: gptme median / fencecall median, only where both found the same "
        "calls)": parse_rows,
        f"Streaming in {STREAM_CHUNK}-character chunks (ms; floor: a minimal consumer that keeps "
        "each chunk and joins at a newline; last columns: time at 200 KB / time at 100 KB, "
        "for fencecall and for the floor)":
            stream_rows,
        "Streaming a reply until its first call (ms): fencecall's loop, and gptme's chat loop "
        "(re-parses at each newline) and per-chunk re-parsing": chat_loop_rows,
        "Cold start (ms)": cold_start_rows,
        "Tool call overhead (ms)": tools.rows,
        "Sandbox start and per-call cost (ms)": sandbox.measure,
        "Peak memory (tracemalloc, allocations beyond the input)": memory_rows,
    }


def main() -> None:
    meta = {"time": datetime.now(UTC).isoformat(), "python": platform.python_version(),
            "machine": f"{platform.machine()}, {platform.processor() or 'cpu unknown'}, "
                       f"{_cpus()} CPUs", "gptme": gptme_adapter.version(),
            "lxml": gptme_adapter.lxml_version(), "parser": _parser_build()}
    results = Results(meta)
    gptme = (f"gptme {meta['gptme']} (lxml {meta['lxml'] or 'not installed'})" if meta["gptme"]
             else "gptme not installed: gptme columns are empty (see README, Benchmarks)")
    print(f"fencecall benchmarks: Python {meta['python']} on {meta['machine']}; "
          f"fencecall's parser {meta['parser']}; {gptme}")
    print(f"Results go to {results.path} as they are measured.")
    measured: targets.Rows = {}
    for title, measure in sections().items():
        rows: list[Row] = []
        for row in measure():
            rows.append(row)
            results.add(title, row)
        if rows:
            print_table(title, rows)
        measured[getattr(measure, "__name__", title)] = rows
    title = "Targets (issue 15), judged from this run's rows"
    judged = targets.rows(measured)
    for row in judged:
        results.add(title, row)
    print_table(title, judged)
    print(f"\nResults written to {results.path}")


def _parser_build() -> str:
    """How fencecall's parser runs here: compiled, or its sources as plain Python."""
    return "compiled (mypyc)" if compiled.active() else "as plain Python (not compiled)"


def _cpus() -> int:
    import os

    return os.cpu_count() or 0


if __name__ == "__main__":
    main()
