"""Parser throughput: whole-text and streaming MB/s per input shape and size.

Run: ``python -m benchmarks.parse``. Streaming feeds 64-byte chunks; the last column divides
the 1 MB streaming MB/s by the 10 KB one: near 1.0 means the cost per byte does not grow with
the reply, i.e. streaming is linear.
"""

from __future__ import annotations

import functools

from fencecall import StreamParser, parse_calls

from .inputs import MARKDOWN_SHAPES, SIZES
from .timing import best_seconds, mb_per_s

CHUNK = 64


def stream(text: str, chunk: int = CHUNK) -> int:
    parser = StreamParser()
    found = 0
    for i in range(0, len(text), chunk):
        found += len(parser.feed(text[i : i + chunk]))
    return found + len(parser.finish())


def measure() -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for shape, make in MARKDOWN_SHAPES.items():
        for label, size in SIZES.items():
            text = make(size)
            whole = best_seconds(functools.partial(parse_calls, text))
            streamed = best_seconds(functools.partial(stream, text))
            assert stream(text) == len(parse_calls(text))
            rows.append({"shape": shape, "size": label, "bytes": len(text),
                         "whole_mb_s": mb_per_s(len(text), whole),
                         "stream_mb_s": mb_per_s(len(text), streamed)})
    return rows


def print_table(rows: list[dict[str, object]]) -> None:
    print(f"{'shape':<20}{'size':>8}{'whole MB/s':>12}{'stream MB/s':>13}")
    for row in rows:
        print(f"{row['shape']!s:<20}{row['size']!s:>8}{row['whole_mb_s']:>12.1f}"
              f"{row['stream_mb_s']:>13.1f}")
    print(f"\nstreaming linearity (1 MB MB/s / 10 KB MB/s, {CHUNK}-byte chunks):")
    for shape in MARKDOWN_SHAPES:
        per = {r["size"]: r["stream_mb_s"] for r in rows if r["shape"] == shape}
        small, big = per["10 KB"], per["1 MB"]
        assert isinstance(small, float) and isinstance(big, float)
        print(f"  {shape:<20}{big / small:>6.2f}")


if __name__ == "__main__":
    print_table(measure())
