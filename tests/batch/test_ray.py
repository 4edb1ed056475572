"""The Ray backend on a local Ray started by the test: shards of tasks as Ray tasks, results
streamed back to one append-only file, each task exactly once (a lost worker included)."""

from __future__ import annotations

import dataclasses
import json
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fencecall.accounting import Limits
from fencecall.batch import BatchOptions, ResultFile, TaskResult
from fencecall.batch.ray_backend import run_batch_ray
from fencecall.message import Outcome
from tests.cli.conftest import cli_env
from tests.fakeserver import FakeModelServer, Reply

from .conftest import Script, task

ray = pytest.importorskip("ray", reason="Ray is not installed (pip install 'fencecall[ray]')")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    try:
        ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    except Exception as err:  # no shared memory, no ports: an environment Ray cannot use
        pytest.skip(f"a local Ray instance cannot start here: {err}")
    yield ray
    ray.shutdown()


def test_shards_run_on_ray_and_each_task_is_written_once(
        local_ray: Any, script: Script, options: BatchOptions, tmp_path: Path) -> None:
    ids = [f"r{i}" for i in range(12)]
    marker = tmp_path / "worker-was-lost"
    for task_id in ids:
        script.shell_then_answer(task_id, f"echo {task_id} > mine.txt")
    # r5's first run kills its Ray worker (bash's parent): Ray runs the shard again
    script.shell_then_answer(
        "r5", f"if [ ! -e {marker} ]; then touch {marker}; kill -9 $PPID; fi; echo r5 > mine.txt")
    out = tmp_path / "results.jsonl"
    with ResultFile(out) as results:  # one task finished in an earlier run
        results.append(TaskResult("r0", Outcome.DONE, final="earlier"))
    started: list[str] = []
    run = dataclasses.replace(options, concurrency=3)
    got = list(run_batch_ray([task(i) for i in ids], run, out=out, shard_size=4,
                             on_start=started.append))
    assert marker.exists()
    assert sorted(r.id for r in got) == sorted(ids[1:])
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert Counter(line["id"] for line in lines) == Counter(ids)
    assert lines[0]["final"] == "earlier" and script.requests["r0"] == 0
    for result in got:
        assert result.status == "done", result
        assert (Path(str(result.workspace)) / "mine.txt").read_text() == f"{result.id}\n"
    assert set(started) >= set(ids[1:])
    again = list(run_batch_ray([task(i) for i in ids], run, out=out))
    assert again == []  # everything is finished: nothing runs


def test_the_cli_runs_on_an_existing_ray_cluster(
        local_ray: Any, script: Script, server: FakeModelServer, tmp_path: Path) -> None:
    ids = [f"c{i}" for i in range(6)]
    for task_id in ids:
        script.shell_then_answer(task_id, "echo hi")
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "out.jsonl"
    tasks.write_text("".join(json.dumps({"id": i, "prompt": f"task {i}: x"}) + "\n"
                             for i in ids))
    address = local_ray.get_runtime_context().gcs_address
    done = subprocess.run(
        [sys.executable, "-m", "fencecall.cli.main", "batch", str(tasks), "--out", str(out),
         "-m", "local/fake", "-y", "--sandbox", "off", "-j", "2", "--shard-size", "2",
         "--ray", address],
        env=cli_env(tmp_path, server.openai_url), capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert Counter(json.loads(line)["id"] for line in out.read_text().splitlines()) == Counter(
        ids)


def test_one_ledger_holds_the_batch_budget_across_ray_shards(
        local_ray: Any, script: Script, options: BatchOptions, tmp_path: Path) -> None:
    ids = [f"b{i}" for i in range(9)]
    for task_id in ids:  # an answer each, whose request the server bills at 3,050 tokens
        script.add(task_id, Reply("the answer", usage=(3_000, 50)))  # more than fencecall counts
    capped = dataclasses.replace(options, budget=Limits(tokens=10_500), max_tokens=3_000,
                                 concurrency=2)
    got = {r.id: r for r in run_batch_ray([task(i) for i in ids], capped,
                                          out=tmp_path / "results.jsonl", shard_size=3)}
    assert sorted(got) == ids
    # three shards, one cap: two requests fit it, whichever shards sent them
    assert Counter(r.status for r in got.values()) == {Outcome.DONE: 2, Outcome.BUDGET: 7}
    assert sum(script.requests.values()) == 2
    assert sum(sum(r.tokens.values()) for r in got.values()) == 6_100


@pytest.mark.parametrize(("signal_number", "code"), [(signal.SIGINT, 130),
                                                     (signal.SIGTERM, 143)],
                         ids=["ctrl-c", "sigterm"])
def test_a_stop_of_the_cli_on_ray_stops_the_shards_tasks_whole(
        local_ray: Any, script: Script, server: FakeModelServer, tmp_path: Path,
        signal_number: int, code: int) -> None:
    """Ctrl-C and SIGTERM of ``fencecall batch --ray`` cancel the shards: the task's command
    (a sleep, and what it started) ends, no result is written for it, and the exit status
    says which signal came (Ray's own SIGTERM handler would exit 1 at once)."""
    started = tmp_path / "started"
    script.shell_then_answer("slow", f"touch {started}; sleep 300 & sleep 301")
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "out.jsonl"
    tasks.write_text(json.dumps({"id": "slow", "prompt": "task slow: x"}) + "\n")
    proc = subprocess.Popen(
        [sys.executable, "-m", "fencecall.cli.main", "batch", str(tasks), "--out", str(out),
         "-m", "local/fake", "-y", "--sandbox", "off",
         "--ray", local_ray.get_runtime_context().gcs_address],
        env=cli_env(tmp_path, server.openai_url), stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not started.exists():
            assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
            time.sleep(0.1)
        proc.send_signal(signal_number)
        _, stderr = proc.communicate(timeout=120)
        assert proc.returncode == code, stderr
        assert not out.exists() or out.read_text() == ""
        deadline = time.monotonic() + 10
        while sleeping() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert sleeping() == []
    finally:
        if proc.poll() is None:
            proc.kill()


def sleeping() -> list[str]:
    """The pids of this test's sleeps still running."""
    done = subprocess.run(["pgrep", "-f", "^sleep 30[01]$"], capture_output=True, text=True)
    return done.stdout.split()
