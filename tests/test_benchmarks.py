"""The benchmark code keeps working (no timings are asserted: numbers live in benchmarks/)."""

from __future__ import annotations

import pytest
from benchmarks import gptme_adapter, run
from benchmarks.inputs import SHAPES

from fencecall import StreamParser, parse_calls


@pytest.mark.parametrize("fmt", sorted(SHAPES))
def test_shapes_have_calls_and_stream_like_whole_text(fmt: str) -> None:
    for make in SHAPES[fmt].values():
        text = make(10_000)
        assert len(text) >= 10_000 or fmt == "markdown"
        whole = parse_calls(text, fmt)
        assert whole
        parser = StreamParser(fmt)
        streamed = [c for i in range(0, len(text), 8) for c in parser.feed(text[i : i + 8])]
        assert streamed + parser.finish() == whole


def test_table_printing(capsys: pytest.CaptureFixture[str]) -> None:
    run.print_table("T", [{"case": "a", "value": 1.5, "none": None, "flag": True}])
    out = capsys.readouterr().out
    assert "## T" in out and "1.50" in out and "-" in out and "yes" in out


def test_gptme_comparison_is_optional() -> None:
    if gptme_adapter.available():
        pytest.skip("gptme is installed here")
    assert gptme_adapter.whole_parser("markdown") is None
    assert gptme_adapter.version() is None
