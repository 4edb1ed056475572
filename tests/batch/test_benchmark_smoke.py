"""The batch benchmark stays importable and runs (a tiny batch, no timing asserted)."""

from __future__ import annotations

import json

import pytest
from benchmarks import batch


def test_batch_benchmark_runs(capsys: pytest.CaptureFixture[str]) -> None:
    assert batch.main(["--levels", "2", "--waves", "3", "--delay", "0.05", "--tools", "save",
                       "--idle", "2", "--idle-seconds", "1", "--repeats", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out.splitlines()[-1])
    [row] = report["throughput"]
    assert row["tasks"] == 6 and row["runs"] == 2 and row["tool calls/s"] > 0
    worst, best = map(float, str(row["of ideal (worst..best)"]).split(".."))
    assert 0 < worst <= row["of ideal"] <= best
    [memory] = report["memory"]
    assert memory["idle sessions"] == 2
