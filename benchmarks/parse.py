"""Parser throughput: whole-text and streaming MB/s per format, input shape and size.

Run: ``python -m benchmarks.parse``. Medians over the same runs (see :mod:`.timing`).
Streaming feeds 64-byte chunks; the last table divides the 1 MB streaming MB/s by the 10 KB
one: near 1.0 means the cost per byte does not grow with the reply, i.e. streaming is linear.
"""

from __future__ import annotations

import functools

from fencecall import StreamParser
from fencecall.parsing import parse_calls

from .inputs import OPEN_MODEL_SHAPES, SHAPES, SIZES
from .timing import compare, mb_per_s

CHUNK = 64
ALL_SHAPES = {**SHAPES, **OPEN_MODEL_SHAPES}


def stream(text: str, fmt: str, chunk: int = CHUNK) -> int:
    parser = StreamParser(fmt)
    found = 0
    for i in range(0, len(text), chunk):
        found += len(parser.feed(text[i : i + chunk]))
    return found + len(parser.finish())


def measure() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for fmt, shapes in ALL_SHAPES.items():
        for shape, make in shapes.items():
            for label, size in SIZES.items():
                text = make(size)
                t = compare({"whole": functools.partial(parse_calls, text, fmt),
                             "stream": functools.partial(stream, text, fmt)}, budget=0.5)
                calls = len(parse_calls(text, fmt))
                assert stream(text, fmt) == calls
                rows.append({"format": fmt, "shape": shape, "size": label, "bytes": len(text),
                             "calls": calls,
                             "whole_mb_s": mb_per_s(len(text), t["whole"].median),
                             "stream_mb_s": mb_per_s(len(text), t["stream"].median)})
    return rows


def print_table(rows: list[dict[str, object]]) -> None:
    print(f"{'format':<13}{'shape':<20}{'size':>8}{'calls':>7}{'whole MB/s':>12}"
          f"{'stream MB/s':>13}")
    for row in rows:
        print(f"{row['format']!s:<13}{row['shape']!s:<20}{row['size']!s:>8}{row['calls']!s:>7}"
              f"{row['whole_mb_s']:>12.1f}{row['stream_mb_s']:>13.1f}")
    print(f"\nstreaming linearity (1 MB MB/s / 10 KB MB/s, {CHUNK}-byte chunks):")
    for fmt, shapes in ALL_SHAPES.items():
        for shape in shapes:
            per = {r["size"]: r["stream_mb_s"] for r in rows
                   if r["format"] == fmt and r["shape"] == shape}
            small, big = per["10 KB"], per["1 MB"]
            assert isinstance(small, float) and isinstance(big, float)
            print(f"  {fmt:<13}{shape:<20}{big / small:>6.2f}")


if __name__ == "__main__":
    print_table(measure())
