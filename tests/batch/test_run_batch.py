"""run_batch against the fake server: many tasks at once, isolated, stopped and failed."""

from __future__ import annotations

import dataclasses
import json
import os
import random
from pathlib import Path

import pytest

from fencecall.batch import BatchOptions, Task, TaskResult, WorkspaceSpec, run_batch
from fencecall.batch._runner import KeepPolicy
from fencecall.sandbox._bwrap import sandbox_support
from tests.fakeserver import Reply

from ..processes import running
from .conftest import Script, git, task


def by_id(results: list[TaskResult]) -> dict[str, TaskResult]:
    assert len({r.id for r in results}) == len(results)
    return {r.id: r for r in results}


def test_many_tasks_run_at_once_each_to_its_own_result(
        script: Script, options: BatchOptions, tmp_path: Path) -> None:
    ids = [f"t{i}" for i in range(24)]
    rng = random.Random(7)
    for task_id in ids:  # replies of varied latency, so tasks finish out of order
        script.shell_then_answer(task_id, f"echo {task_id}-out", latency=rng.random() * 0.2)
    out = tmp_path / "results.jsonl"
    started: list[str] = []
    results = by_id(list(run_batch([task(i) for i in ids], options, out=out,
                                   on_start=started.append)))
    assert sorted(results) == sorted(ids) == sorted(started)
    for task_id, result in results.items():
        assert (result.status, result.steps, result.error) == ("done", 2, None)
        assert result.final == f"finished {task_id}"
        assert [(c.tool, c.outcome) for c in result.tool_calls] == [("shell", "ok")]
        log = [json.loads(line) for line in Path(str(result.log)).read_text().splitlines()]
        shown = [r["content"] for r in log if r.get("role") == "system"]
        assert f"{task_id}-out" in shown[0] and all(
            f"{other}-out\n" not in shown[0] for other in ids if other != task_id)
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(line["id"] for line in lines) == sorted(ids)
    assert script.requests == {task_id: 2 for task_id in ids}


def test_results_do_not_depend_on_the_order_of_the_tasks(
        script: Script, options: BatchOptions, tmp_path: Path) -> None:
    ids = [f"o{i}" for i in range(12)]
    for task_id in ids:
        script.shell_then_answer(task_id, f"printf '%s' {task_id} > mine.txt; cat mine.txt")

    def outcome(order: list[str], name: str) -> dict[str, tuple[object, ...]]:
        run = dataclasses.replace(options, folder=tmp_path / name, concurrency=5)
        return {r.id: (r.status, r.final, r.steps, [c.outcome for c in r.tool_calls],
                       Path(str(r.workspace), "mine.txt").read_text())
                for r in run_batch([task(i) for i in order], run)}

    forward = outcome(ids, "forward")
    assert outcome(list(reversed(ids)), "backward") == forward
    assert forward["o3"] == ("done", "finished o3", 2, ["ok"], "o3")


@pytest.mark.parametrize("sandbox", ["off", "workspace-write"])
def test_tasks_writing_the_same_path_never_meet(
        script: Script, options: BatchOptions, tmp_path: Path, sandbox: str) -> None:
    if sandbox != "off" and not sandbox_support().available:
        pytest.skip(f"the sandbox cannot run here: {sandbox_support().reason}")
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "shared.txt").write_text("original\n")
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-qm", "start")
    tasks = []
    for name in ("left", "right"):
        script.shell_then_answer(name, f"echo {name} > shared.txt && echo new > {name}.txt")
        tasks.append(task(name, workspace=WorkspaceSpec(path=repo)))
    script.shell_then_answer("files", "cat given.txt >> shared.txt")
    tasks.append(task("files", workspace=WorkspaceSpec(files={"given.txt": "from files\n",
                                                              "shared.txt": "files\n"})))
    results = by_id(list(run_batch(tasks, dataclasses.replace(options, sandbox=sandbox))))
    assert {r.status for r in results.values()} == {"done"}
    for name in ("left", "right"):
        workspace = Path(str(results[name].workspace))
        assert (workspace / "shared.txt").read_text() == f"{name}\n"
        diff = results[name].diff or ""
        assert f"-original\n+{name}\n" in diff and f"+++ b/{name}.txt" in diff
        assert "left" not in diff.replace(name, "") or name == "left"
    assert (Path(str(results["files"].workspace)) / "shared.txt").read_text() == (
        "files\nfrom files\n")
    assert results["files"].diff is None  # not a repository
    assert (repo / "shared.txt").read_text() == "original\n"
    assert git(repo, "status", "--porcelain") == ""


def test_a_git_workspace_is_cloned_at_its_ref(
        script: Script, options: BatchOptions, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    for text in ("one", "two"):
        (repo / "f.txt").write_text(text + "\n")
        git(repo, "add", ".")
        git(repo, "commit", "-qm", text)
    first = git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    script.shell_then_answer("g", "cat f.txt && echo three >> f.txt")
    [result] = run_batch([task("g", workspace=WorkspaceSpec(git=str(repo), ref=first))],
                         options)
    assert result.status == "done"
    assert "+three" in (result.diff or "") and " one" in (result.diff or "")


def test_a_task_past_its_timeout_is_stopped_and_its_commands_killed(
        script: Script, options: BatchOptions) -> None:
    script.shell_then_answer("slow", "sleep 4242.5")  # past the tool's own timeout too
    script.add("stuck", Reply("thinking", latency=30))  # a model that does not answer
    script.shell_then_answer("quick", "echo fine")
    tasks = [task("slow", task_timeout=1.0), task("stuck", task_timeout=1.0), task("quick")]
    results = by_id(list(run_batch(tasks, options)))
    assert results["quick"].status == "done"
    for name in ("slow", "stuck"):
        assert results[name].status == "timeout", results[name]
        assert "ran past its timeout of 1 s" in str(results[name].error)
    assert "did not end within" not in str(results["slow"].error)
    assert running("4242.5") == []
    assert script.requests["slow"] == 1  # no reply was asked for after the stop


def test_a_failing_model_is_a_result_not_a_crash(
        script: Script, options: BatchOptions) -> None:
    script.add("broken", Reply(status=500), Reply(status=500), Reply(status=500))
    script.shell_then_answer("fine", "echo ok")
    tasks = [task("broken"), task("fine"), task("nomodel", model="nowhere/x"),
             Task("badtools", "task badtools: x", tools=("no-such-tool",))]
    results = by_id(list(run_batch(tasks, options)))
    assert results["fine"].status == "done"
    assert results["broken"].status == "error" and "500" in str(results["broken"].error)
    assert results["nomodel"].status == "error"
    assert "unknown provider 'nowhere'" in str(results["nomodel"].error)
    assert results["badtools"].status == "error" and "no-such-tool" in str(
        results["badtools"].error)


def test_without_yes_calls_that_need_a_yes_are_declined(
        script: Script, options: BatchOptions) -> None:
    script.shell_then_answer("careful", "echo hi > x.txt")
    [result] = run_batch([task("careful")], dataclasses.replace(options, yes=False))
    assert result.status == "done"
    assert [(c.tool, c.outcome) for c in result.tool_calls] == [("shell", "declined")]
    assert result.tool_errors == 1
    assert not (Path(str(result.workspace)) / "x.txt").exists()


def test_results_carry_usage_steps_and_limits(
        script: Script, options: BatchOptions) -> None:
    script.add("answer", Reply("the answer", usage=(100, 20)))
    script.add("loops", *[Reply("```shell\necho again\n```\n") for _ in range(5)])
    results = by_id(list(run_batch([task("answer"), task("loops", max_steps=2)], options)))
    answer = results["answer"]
    assert (answer.status, answer.steps, answer.final) == ("done", 1, "the answer")
    assert answer.tokens == {"input_tokens": 100, "output_tokens": 20,
                             "cache_read_tokens": 0, "cache_write_tokens": 0}
    assert answer.cost_usd is None  # a local model has no list price
    assert answer.model == "local/fake" and answer.wall_s > 0 and answer.started
    assert results["loops"].status == "step-limit" and results["loops"].steps == 2
    assert results["loops"].counted_replies == 2  # stopped at their calls: no usage came
    assert os.stat(str(answer.log)).st_mode & 0o077 == 0


def test_closing_the_generator_stops_the_running_tasks(
        script: Script, options: BatchOptions, tmp_path: Path) -> None:
    script.shell_then_answer("first", "echo 1")
    for i in range(4):
        script.shell_then_answer(f"hang{i}", "sleep 4343.5")
    out = tmp_path / "r.jsonl"
    tasks = [task("first")] + [task(f"hang{i}") for i in range(4)]
    results = run_batch(tasks, dataclasses.replace(options, concurrency=5), out=out)
    assert next(results).id == "first"
    results.close()
    assert running("4343.5") == []
    assert [json.loads(line)["id"] for line in out.read_text().splitlines()] == ["first"]


@pytest.mark.parametrize("policy", ["failed", "none"])
def test_workspaces_go_with_their_results_when_asked(
        policy: KeepPolicy, script: Script, options: BatchOptions, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir(mode=0o750)
    script.shell_then_answer(
        "ok", f"mkdir -p ro/deep && echo x > ro/deep/f && chmod 500 ro ro/deep && "
              f"ln -s {outside} link && echo made")
    script.add("bad", Reply(status=500))
    results = by_id(list(run_batch([task("ok"), task("bad")],
                                   dataclasses.replace(options, keep_workspaces=policy))))
    ok, bad = results["ok"], results["bad"]
    assert (ok.status, bad.status) == ("done", "error")
    assert ok.workspace is None and ok.error is None
    assert not (Path(str(ok.log)).parent / "workspace").exists()
    assert Path(str(ok.log)).is_file() and Path(str(bad.log)).is_file()
    assert outside.is_dir() and oct(outside.stat().st_mode & 0o777) == oct(0o750)
    if policy == "failed":
        assert bad.workspace is not None and Path(bad.workspace).is_dir()
    else:
        assert bad.workspace is None


def test_an_autonomous_task_ends_done_only_at_complete(
        script: Script, options: BatchOptions, tmp_path: Path) -> None:
    """``TH`` and a ``THOUGHT:`` cut short are reminded, not taken as the task's answer; the
    complete call's summary is the result's final. Without the mode ``TH`` is the final."""
    for task_id in ("auto", "plain"):
        script.add(task_id, Reply("TH"), Reply("THOUGHT: `"),
                   Reply("```shell\necho hello\n```\n"),
                   Reply("```complete\nPrinted hello.\n```\n"))
    [auto] = run_batch([task("auto")], dataclasses.replace(options, autonomous=True))
    assert (auto.status, auto.final, auto.steps, auto.error) == ("done", "Printed hello.", 4,
                                                                 None)
    assert [(c.tool, c.outcome) for c in auto.tool_calls] == [("shell", "ok"),
                                                              ("complete", "ok")]
    log = [json.loads(line) for line in Path(str(auto.log)).read_text().splitlines()]
    assert sum(r.get("metadata", {}).get("reminder") is True for r in log) == 2
    [plain] = run_batch([task("plain")], dataclasses.replace(options, folder=tmp_path / "p"))
    assert (plain.status, plain.final, plain.steps) == ("done", "TH", 1)


def test_an_autonomous_task_of_non_answers_gives_up(
        script: Script, options: BatchOptions) -> None:
    script.add("stuck", *[Reply("TH")] * 5)
    [stuck] = run_batch([task("stuck")], dataclasses.replace(options, autonomous=True))
    assert (stuck.status, stuck.steps) == ("gave-up", 3)


def test_the_config_key_makes_batch_tasks_autonomous(
        script: Script, options: BatchOptions, tmp_path: Path) -> None:
    script.add("cfg", Reply("TH"), Reply("```complete\nNothing to do.\n```\n"))
    config = dataclasses.replace(options.config, autonomous=True)
    [result] = run_batch([task("cfg")], dataclasses.replace(options, config=config))
    assert (result.status, result.final, result.steps) == ("done", "Nothing to do.", 2)
