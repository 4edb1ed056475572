"""``fencecall batch`` in a subprocess: killed with -9 midway and resumed, stopped with
Ctrl-C and resumed; every task ends up in the results exactly once."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from tests.cli.conftest import cli_env
from tests.fakeserver import FakeModelServer, Reply

from .conftest import Script

WAIT = 120.0
"""A bound on waiting for the batch to get somewhere: a stuck test fails, never a timing."""


def tasks_file(path: Path, ids: list[str]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "prompt": f"task {i}: say hi",
                                        "metadata": {"n": n}}) + "\n"
                            for n, i in enumerate(ids)))
    return path


def command(tasks: Path, out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "fencecall.cli.main", "batch", str(tasks), "--out", str(out),
            "-m", "local/fake", "-y", "--sandbox", "off", "--retries", "0", *extra]


def start(tmp_path: Path, server: FakeModelServer, tasks: Path, out: Path,
          *extra: str) -> subprocess.Popen[str]:
    return subprocess.Popen(command(tasks, out, *extra), env=cli_env(tmp_path, server.openai_url),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def finish(tmp_path: Path, server: FakeModelServer, tasks: Path, out: Path,
           *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command(tasks, out, *extra), env=cli_env(tmp_path, server.openai_url),
                          capture_output=True, text=True, timeout=WAIT)


def complete_ids(out: Path) -> list[str]:
    if not out.exists():
        return []
    data = out.read_text()
    return [json.loads(line)["id"] for line in data[: data.rfind("\n") + 1].splitlines()]


def wait_for_lines(out: Path, count: int, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + WAIT
    while len(complete_ids(out)) < count:
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the batch made no progress"
        time.sleep(0.05)


@pytest.fixture
def slow_script(script: Script) -> Script:
    for i in range(30):
        script.shell_then_answer(f"k{i}", f"echo k{i}", latency=0.15)
    return script


def test_a_batch_killed_with_9_resumes_and_runs_each_task_exactly_once(
        slow_script: Script, server: FakeModelServer, tmp_path: Path) -> None:
    ids = [f"k{i}" for i in range(30)]
    tasks, out = tasks_file(tmp_path / "tasks.jsonl", ids), tmp_path / "out.jsonl"
    proc = start(tmp_path, server, tasks, out, "-j", "4")
    wait_for_lines(out, 6, proc)
    proc.kill()  # SIGKILL: no cleanup at all
    proc.communicate()
    first = complete_ids(out)
    assert 6 <= len(first) < len(ids)
    with out.open("a") as handle:  # as if the kill had landed mid-write
        handle.write('{"id": "' + next(i for i in ids if i not in first) + '", "stat')
    slow_script.requests.clear()
    done = finish(tmp_path, server, tasks, out, "-j", "4")
    assert done.returncode == 0, done.stderr
    final = complete_ids(out)
    assert Counter(final) == Counter(ids)  # each exactly once
    assert final[: len(first)] == first
    assert "torn" in done.stderr and list(tmp_path.glob("out.jsonl.torn-*"))
    assert f"{len(first)} task(s) already have results" in done.stderr
    assert set(slow_script.requests) == set(ids) - set(first)  # finished ones not rerun
    assert set(slow_script.requests.values()) == {2}  # each unfinished one run once
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(r["status"] == "done" and r["final"] == f"finished {r['id']}" for r in records)
    assert {r["metadata"]["n"] for r in records} == set(range(30))


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_stops_cleanly_and_leaves_a_resumable_file(
        slow_script: Script, server: FakeModelServer, tmp_path: Path,
        signum: signal.Signals) -> None:
    ids = [f"k{i}" for i in range(30)]
    tasks, out = tasks_file(tmp_path / "tasks.jsonl", ids), tmp_path / "out.jsonl"
    proc = start(tmp_path, server, tasks, out, "-j", "3")
    wait_for_lines(out, 3, proc)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=WAIT)
    assert proc.returncode == 128 + signum, stderr
    assert "run the same command again to resume" in stderr
    data = out.read_text()
    assert data.endswith("\n")  # no torn line: stopped between writes
    first = complete_ids(out)
    assert len(first) < len(ids) and len(set(first)) == len(first)
    done = finish(tmp_path, server, tasks, out)
    assert done.returncode == 0, done.stderr
    assert Counter(complete_ids(out)) == Counter(ids)


def test_plain_progress_lines_and_exit_status_without_a_terminal(
        script: Script, server: FakeModelServer, tmp_path: Path) -> None:
    script.shell_then_answer("good", "echo ok")
    script.add("bad", Reply(status=500))
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["good", "bad"])
    done = finish(tmp_path, server, tasks, tmp_path / "o.jsonl")
    assert done.returncode == 1, done.stderr  # a task did not end done
    assert "fencecall batch: 2/2 done, 1 failed, 0 running" in done.stderr
    assert "2 of 2 tasks have results" in done.stderr and "(1 done, 1 error)" in done.stderr
    assert "\x1b[" not in done.stderr  # no bar without a terminal


def test_usage_errors_exit_2(server: FakeModelServer, tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text('{"id": "a", "prompt": "x"}\n{"id": "a", "prompt": "y"}\n')
    done = finish(tmp_path, server, tasks, tmp_path / "o.jsonl")
    assert done.returncode == 2 and "duplicate task ids" in done.stderr
    assert not (tmp_path / "o.jsonl").exists()


def test_mcp_servers_from_the_command_line(
        script: Script, server: FakeModelServer, tmp_path: Path) -> None:
    script.add("m", Reply('```flaky.echo\n{"text": "from the server"}\n```\n'), Reply("done m"))
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["m"])
    out = tmp_path / "o.jsonl"
    flaky = Path(__file__).parent.parent / "mcp_servers" / "flaky_server.py"
    done = finish(tmp_path, server, tasks, out, "--mcp", f"flaky={sys.executable} {flaky}")
    assert done.returncode == 0, done.stderr
    [record] = [json.loads(line) for line in out.read_text().splitlines()]
    assert [call["tool"] for call in record["tool_calls"]] == ["flaky.echo"]
    log = [json.loads(line) for line in Path(record["log"]).read_text().splitlines()]
    [result] = [r for r in log if r.get("role") == "system"]
    assert result["metadata"]["outcome"] == "ok" and "from the server" in result["content"]
    bad = finish(tmp_path, server, tasks, tmp_path / "o2.jsonl", "--mcp", "no-equals-sign")
    assert bad.returncode == 2 and "--mcp" in bad.stderr
    script.add("p", Reply("```shell\necho fine\n```\n"), Reply("done p"))
    broken = finish(tmp_path, server, tasks_file(tmp_path / "p.jsonl", ["p"]),
                    tmp_path / "o3.jsonl", "--mcp", f"broken={sys.executable} -c exit(4)")
    assert broken.returncode == 0, broken.stderr  # the task needs none of its tools
    assert "fencecall batch: warning: MCP server 'broken'" in broken.stderr
    assert "Warning:" not in broken.stderr and "runner.py" not in broken.stderr


def test_keep_workspaces_choices_are_the_runners_policies() -> None:
    from typing import get_args

    from fencecall.batch._runner import KeepPolicy
    from fencecall.cli._arguments import KEEP_WORKSPACES, build_parser

    assert get_args(KeepPolicy) == KEEP_WORKSPACES
    args = build_parser().parse_args(["batch", "t.jsonl", "--out", "o.jsonl",
                                      "--keep-workspaces", "failed"])
    assert args.keep_workspaces == "failed"


def test_a_batch_folder_holding_the_home_is_refused(tmp_path: Path) -> None:
    """Task workspaces live below the batch folder: the conversation logs must not."""
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["a"])
    env = cli_env(tmp_path, "http://127.0.0.1:9")  # the home: tmp_path / "home"
    done = subprocess.run(command(tasks, tmp_path / "out.jsonl", "--dir", str(tmp_path)),
                          env=env, capture_output=True, text=True, timeout=WAIT)
    assert done.returncode == 2, done.stderr
    assert "inside the batch folder" in done.stderr
    assert not (tmp_path / "out.jsonl").exists()
