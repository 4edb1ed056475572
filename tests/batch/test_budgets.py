"""A batch's limits: one ledger shared by every task, checked before each request; once it
cannot cover another request nothing more is sent or started, and every task still gets a
result line with what it spent."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
import time
from collections import Counter
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from fencecall.accounting import Limits
from fencecall.batch import BatchOptions, ResultFile, TaskResult, run_batch
from fencecall.message import Outcome
from tests.cli.conftest import cli_env
from tests.fakeserver import FakeModelServer, Reply, dense_tokens
from tests.support import F

from .conftest import Script, task

PER_TOKEN = 0.001
"""USD: the configured price, 1000 USD per million tokens in and out."""
PRICE = '[models."local/fake"]\nprice = {input = 1000, output = 1000}\n'


def _cut_replies(script: Script, task_id: str, steps: int) -> None:
    """Replies cut at their first call (no usage reported), then an answer."""
    script.add(task_id, *(Reply(f"Step {i}.\n{F}shell\necho {task_id}-{i}\n{F}\nThen more "
                                "words that the model wrote after its call. " * 2)
                          for i in range(steps)), Reply(f"finished {task_id}"))


def _configure(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config" / "fencecall" / "config.toml"
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


def _batch(tmp_path: Path, server: FakeModelServer, ids: list[str], *extra: str,
           timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "out.jsonl"
    tasks.write_text("".join(json.dumps({"id": i, "prompt": f"task {i}: work"}) + "\n"
                             for i in ids))
    done = subprocess.run(
        [sys.executable, "-m", "fencecall.cli.main", "batch", str(tasks), "--out", str(out),
         "-m", "local/fake", "-y", "--sandbox", "off", "--retries", "0", *extra],
        env=cli_env(tmp_path, server.openai_url), capture_output=True, text=True,
        timeout=timeout)
    results = {}
    if out.exists():
        for line in out.read_text().splitlines():
            record = json.loads(line)
            results[record["id"]] = record
    return done, results


def test_a_batch_usd_cap_holds_across_eight_running_tasks_and_starts_nothing_after_it(
        script: Script, tmp_path: Path) -> None:
    ids = [f"u{i}" for i in range(24)]
    for task_id in ids:
        _cut_replies(script, task_id, 5)
    _configure(tmp_path, PRICE)
    cap, reply_limit = 150.0, 200  # the first wave of eight tasks (some $100), and a few
    with FakeModelServer(respond=script, tokenizer=dense_tokens) as server:
        done, results = _batch(tmp_path, server, ids, "-j", "8", "--budget-usd", str(cap),
                               "--max-tokens", str(reply_limit))
        billed = server.billed()
        worst = max(r.input_tokens for r in server.requests) + reply_limit
        sent = Counter(str(r.body["messages"][1]["content"]).split(":")[0].split()[-1]
                       for r in server.requests)
    assert done.returncode == 3, done.stderr
    assert sorted(results) == sorted(ids)  # every task has its line
    statuses = Counter(r["status"] for r in results.values())
    assert statuses["budget"] >= 1 and statuses["done"] >= 1, statuses
    # by the server's own count, past the cap by less than one request per running task
    # (the server bills what it generated after fencecall stopped reading a cut reply)
    assert cap * 0.9 < billed * PER_TOKEN <= cap + 8 * worst * PER_TOKEN, (billed, worst)
    never = [i for i, r in results.items() if str(r.get("error", "")).startswith("not started")]
    assert never, "the cap stopped tasks from starting"
    for task_id in never:
        record = results[task_id]
        assert record["status"] == "budget" and sent[task_id] == 0
        assert "Stopped by the batch's USD budget" in record["error"]
    spent = sum(Decimal(r["cost_usd"]) for r in results.values() if r["cost_usd"])
    assert spent <= Decimal(str(cap))  # what the results say they spent holds the cap


def test_a_task_budget_stops_each_task_and_the_others_go_on(
        script: Script, tmp_path: Path) -> None:
    ids = ["t0", "t1", "t2"]
    for task_id in ids:
        _cut_replies(script, task_id, 8)
    script.add("small", Reply("finished small"))
    with FakeModelServer(respond=script, tokenizer=dense_tokens) as server:
        done, results = _batch(tmp_path, server, [*ids, "small"], "-j", "2",
                               "--task-budget-tokens", "6000", "--max-tokens", "100")
    assert done.returncode == 3, done.stderr
    for task_id in ids:
        record = results[task_id]
        assert record["status"] == "budget", record
        assert sum(record["tokens"].values()) <= 6000
        assert 2 <= record["steps"] < 9
    assert results["small"]["status"] == "done"


def test_the_batch_time_limit_ends_running_commands_and_starts_nothing_after_it(
        script: Script, tmp_path: Path) -> None:
    marker = "617.5"  # a sleep no other process runs
    ids = [f"s{i}" for i in range(5)]
    for task_id in ids:
        script.add(task_id, Reply(f"{F}shell\nsleep {marker}\n{F}\n"), Reply("done"))
    with FakeModelServer(respond=script) as server:
        started = time.monotonic()
        done, results = _batch(tmp_path, server, ids, "-j", "2", "--time-limit", "4")
        took = time.monotonic() - started
    assert done.returncode == 4, done.stderr
    assert took < 4 + 2 + 3, took  # the limit, its 2 s, and the command's start and end
    assert sorted(results) == ids
    ran = [r for r in results.values() if r["steps"]]
    assert len(ran) == 2 and all(r["status"] == "time-limit" for r in ran)
    rest = [r for r in results.values() if not r["steps"]]
    assert all(r["status"] == "time-limit" and r["error"].startswith("not started")
               for r in rest)
    left = subprocess.run(["pgrep", "-f", f"sleep {marker}"], capture_output=True, text=True)
    assert left.stdout == "", left.stdout


def test_a_batch_usd_cap_with_an_unpriced_model_refuses_to_start(
        script: Script, tmp_path: Path) -> None:
    with FakeModelServer(respond=script) as server:
        done, results = _batch(tmp_path, server, ["a", "b"], "--budget-usd", "5")
        assert server.requests == []
    assert done.returncode == 2, done.stderr
    assert "the price of local/fake is unknown" in done.stderr
    assert results == {}


def test_a_resumed_batch_counts_what_its_earlier_results_spent(
        script: Script, options: BatchOptions, tmp_path: Path) -> None:
    _configure(tmp_path, PRICE)
    out = tmp_path / "results.jsonl"
    with ResultFile(out) as results:
        results.append(TaskResult("old", Outcome.DONE, cost_usd="9.5",
                                  tokens={"input_tokens": 9_000, "output_tokens": 500}))
    script.add("new", Reply("finished new"))
    capped = dataclasses.replace(options, budget=Limits(tokens=10_000), max_tokens=600)
    got = list(run_batch([task("old"), task("new")], capped, out=out))
    assert [(r.id, r.status) for r in got] == [("new", Outcome.BUDGET)]
    assert script.requests["new"] == 0  # 9,500 spent + its worst case > 10,000: not sent
    assert "Stopped by the batch's token budget: spent 9,500 tokens" in str(got[0].final or
                                                                            got[0].error)


@pytest.mark.parametrize("concurrency", [1, 4])
def test_the_batch_ledger_is_shared_by_tasks_of_the_api(
        script: Script, options: BatchOptions, tmp_path: Path, concurrency: int) -> None:
    for i in range(10):  # an answer each, whose request the server bills at 3,050 tokens
        script.add(f"a{i}", Reply("the answer", usage=(3_000, 50)))
    capped = dataclasses.replace(options, budget=Limits(tokens=10_500), max_tokens=3_000,
                                 concurrency=concurrency)
    got = {r.id: r for r in run_batch([task(f"a{i}") for i in range(10)], capped)}
    assert len(got) == 10
    # two fit (6,100 tokens, more than the estimate counts of their input, some 2,100 tokens
    # each); the third's worst case (that input and 3,000 out) does not, whatever order they
    # settle in
    assert Counter(r.status for r in got.values()) == {Outcome.DONE: 2, Outcome.BUDGET: 8}
    assert sum(sum(r.tokens.values()) for r in got.values()) == 6_100
    assert sum(script.requests.values()) == 2
