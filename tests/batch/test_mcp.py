"""MCP tools in a batch: listed once, a server process of its own per task, in a private
folder of its own (never the task's workspace, where the model writes)."""

from __future__ import annotations

import json
import os
import re
import sys
import time
from dataclasses import replace
from pathlib import Path

import pytest

from fencecall.batch import BatchOptions, run_batch
from fencecall.tools.mcp import McpServerConfig
from tests.fakeserver import Reply

from ..mcp_servers.conftest import FLAKY, alive
from .conftest import Script, task

FLAKY_SERVER = McpServerConfig("flaky", command=sys.executable, args=(str(FLAKY),))


def _results_of_calls(log: Path) -> list[str]:
    records = [json.loads(line) for line in log.read_text().splitlines()]
    return [r["content"] for r in records
            if r.get("role") == "system" and "outcome" in (r.get("metadata") or {})]


def test_each_task_calls_mcp_tools_on_a_server_of_its_own(
        script: Script, options: BatchOptions) -> None:
    ids = ["m1", "m2", "m3"]
    for task_id in ids:
        script.add(task_id, Reply("```flaky.count\n{}\n```\n"),
                   Reply("```flaky.where\n{}\n```\n"), Reply(f"finished {task_id}"))
    batch = [task(task_id, tools=("flaky.*",)) for task_id in ids]
    results = list(run_batch(batch, replace(options, mcp_servers=(FLAKY_SERVER,),
                                            concurrency=3)))
    pids = set()
    for result in results:
        assert result.status == "done", result.error
        assert [(c.tool, c.outcome) for c in result.tool_calls] == [
            ("flaky.count", "ok"), ("flaky.where", "ok")]
        counted, where = _results_of_calls(Path(str(result.log)))
        found = re.search(r"count=(\d+) pid=(\d+)", counted)
        assert found is not None, counted
        assert found.group(1) == "1"  # a fresh process: no other task's calls counted
        pids.add(int(found.group(2)))
        assert f"cwd={result.workspace}" not in where and "fencecall-mcp-" in where
    assert len(pids) == len(ids)
    assert not any(alive(pid) for pid in pids)  # closed with their tasks


def test_an_mcp_server_that_cannot_start_fails_only_the_tasks_that_name_its_tools(
        script: Script, options: BatchOptions) -> None:
    broken = McpServerConfig("broken", command=sys.executable, args=("-c", "raise SystemExit(4)"),
                             start_timeout=10.0)
    script.add("needs", Reply("```broken.anything\n{}\n```\n"), Reply("finished needs"))
    script.shell_then_answer("plain", "echo fine")
    with pytest.warns(UserWarning, match="MCP server 'broken'"):
        results = {r.id: r for r in run_batch(
            [task("needs", tools=("broken.anything",)), task("plain", tools=("shell",))],
            replace(options, mcp_servers=(broken,), concurrency=1))}
    assert results["plain"].status == "done", results["plain"].error
    assert results["needs"].status == "error"
    assert "unknown tool 'broken.anything'" in str(results["needs"].error)
    assert os.path.isdir(str(results["needs"].workspace))


def test_a_task_that_times_out_in_an_mcp_call_ends_at_its_timeout(
        script: Script, options: BatchOptions) -> None:
    script.add("stuck", Reply('```flaky.hang\n{"seconds": 600}\n```\n'), Reply("finished"))
    started = time.monotonic()
    [result] = run_batch([task("stuck", tools=("flaky.*",), task_timeout=12.0)],
                         replace(options, mcp_servers=(FLAKY_SERVER,), grace=60.0))
    assert result.status == "timeout", result.error
    assert "ran past its timeout of 12 s" in str(result.error)
    assert time.monotonic() - started < 40  # not the grace, nor the call's own timeout
    [stopped] = _results_of_calls(Path(str(result.log)))  # the call was under way
    assert "MCP server 'flaky'" in stopped
    assert [(c.tool, c.outcome) for c in result.tool_calls] == [("flaky.hang", "error")]
