"""``fencecall batch --trajectories``: each finished task's trajectory in ATIF beside its
log, its path in the task's result, valid by Harbor's own models."""

from __future__ import annotations

import json
from pathlib import Path

from tests.atif_shape import check_shape
from tests.fakeserver import FakeModelServer, Reply
from tests.harbor import validate

from .conftest import Script
from .test_batch_cli import finish, tasks_file


def test_each_finished_task_gets_a_valid_trajectory_beside_its_log(
        script: Script, server: FakeModelServer, tmp_path: Path) -> None:
    script.add("one", Reply("```shell\necho one\n```\n", logprobs=[
        ("```", -0.1), ("shell", -0.2), ("\n", 0.0), ("echo one", -0.3), ("\n```\n", 0.0)]),
        Reply("finished one"))
    script.shell_then_answer("two", "echo two")
    tasks = tasks_file(tmp_path / "tasks.jsonl", ["one", "two"])
    out = tmp_path / "o.jsonl"
    done = finish(tmp_path, server, tasks, out, "--trajectories", "--logprobs")
    assert done.returncode == 0, done.stderr
    records = {r["id"]: r for r in map(json.loads, out.read_text().splitlines())}
    for task_id, record in records.items():
        path = Path(record["trajectory"])
        assert path.parent == Path(record["log"]).parent and path.name == "trajectory.json"
        doc = json.loads(path.read_text())
        check_shape(doc)
        assert validate(path) == "ATIF-v1.8 3", task_id
        assert doc["steps"][1]["tool_calls"][0]["arguments"] == {
            "command": f"echo {task_id}"}
    one = json.loads(Path(records["one"]["trajectory"]).read_text())
    assert one["steps"][1]["metrics"]["logprobs"] == [-0.1, -0.2, 0.0, -0.3, 0.0]


def test_without_the_flag_no_trajectory_is_written(
        script: Script, server: FakeModelServer, tmp_path: Path) -> None:
    script.shell_then_answer("one", "echo one")
    out = tmp_path / "o.jsonl"
    done = finish(tmp_path, server, tasks_file(tmp_path / "tasks.jsonl", ["one"]), out)
    assert done.returncode == 0, done.stderr
    [record] = map(json.loads, out.read_text().splitlines())
    assert record["trajectory"] is None
    assert not (Path(record["log"]).parent / "trajectory.json").exists()
