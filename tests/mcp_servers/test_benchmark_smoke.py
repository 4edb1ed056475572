"""The MCP benchmark stays importable and runs (a few calls, no timing asserted)."""

from __future__ import annotations

import pytest
from benchmarks import mcp_calls


def test_mcp_benchmark_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_calls, "CALLS", 3)
    monkeypatch.setattr(mcp_calls, "WARMUP", 1)
    rows = mcp_calls.measure()
    assert [name for name, _, _ in rows] == ["built-in read", "MCP SDK alone (floor)",
                                            "fencecall MCP tool"]
    assert all(median >= least > 0 for _, median, least in rows)
