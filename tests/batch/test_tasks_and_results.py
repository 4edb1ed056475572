"""The tasks file and the results file, on their own."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fencecall.batch import ResultFile, ResultFileError, TaskError, TaskResult, load_tasks
from fencecall.batch._results import ToolCallRecord
from fencecall.batch._runner import folder_name
from fencecall.message import Outcome


def write_lines(path: Path, *records: object) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n"
                            for r in records))
    return path


def test_tasks_are_read_with_their_settings(tmp_path: Path) -> None:
    (tmp_path / "repo").mkdir()
    path = write_lines(
        tmp_path / "tasks.jsonl",
        {"id": "a", "prompt": "p", "workspace": "repo", "model": "local/x",
         "tools": "shell, save", "format": "xml", "max_steps": 3, "task_timeout": 1.5,
         "metadata": {"k": [1]}, "image": "img", "cpus": 1.5, "memory_mb": 512},
        "",
        {"id": 7, "prompt": "q", "workspace": {"files": {"src/a.py": "x = 1\n"}}},
        {"id": "c", "prompt": "r", "workspace": {"git": "repo", "ref": "main"}})
    a, b, c = load_tasks(path)
    assert (a.id, a.tools, a.format, a.max_steps, a.task_timeout) == (
        "a", ("shell", "save"), "xml", 3, 1.5)
    assert a.workspace.path == (tmp_path / "repo").resolve()
    assert a.metadata == {"k": [1]}
    assert (a.image, a.cpus, a.memory_mb, b.cpus, b.memory_mb) == ("img", 1.5, 512, None, None)
    assert b.id == "7" and b.workspace.files == {"src/a.py": "x = 1\n"}
    assert c.workspace.git == str((tmp_path / "repo").resolve()) and c.workspace.ref == "main"


@pytest.mark.parametrize(("line", "says"), [
    ('{"id": "a"}', "prompt must be"),
    ('{"prompt": "p"}', "id must be"),
    ('{"id": "a", "prompt": "p", "promt": 1}', "promt: unknown setting; did you mean prompt?"),
    ('{"id": "a", "prompt": "p", "workspace": {"fils": {}}}',
     "workspace.fils: unknown setting; did you mean files?"),
    ('{"id": "a", "prompt": "p", "task_timeout": -1}', "task_timeout must be"),
    ('{"id": "a", "prompt": "p", "timeout": -1}', "task_timeout must be"),
    ('{"id": "a", "prompt": "p", "timeout": 5, "task_timeout": 5}',
     "timeout and task_timeout: timeout is the old name of task_timeout"),
    ('{"id": "a", "prompt": "p", "max_steps": 1.5}', "max_steps must be"),
    ('{"id": "a", "prompt": "p", "format": "yaml"}', "format must be"),
    ('{"id": "a", "prompt": "p", "cpus": 0}', "cpus must be a positive number, got 0"),
    ('{"id": "a", "prompt": "p", "memory_mb": 0.5}', "memory_mb must be a positive integer"),
    ('{"id": "a", "prompt": "p", "workspace": "missing"}', "is not a folder"),
    ('{"id": "a", "prompt": "p", "workspace": {"files": {"../x": ""}}}', "inside the"),
    ('{"id": "a", "prompt": "p", "workspace": {"ref": "v1"}}', "ref needs"),
    ('{"id": "a", "prompt": "p"', "line 2: not JSON"),
])
def test_a_bad_task_is_an_error_naming_its_line(tmp_path: Path, line: str, says: str) -> None:
    path = write_lines(tmp_path / "t.jsonl", {"id": "ok", "prompt": "p"}, line)
    with pytest.raises(TaskError, match="line 2") as caught:
        load_tasks(path)
    assert says in str(caught.value)


def test_duplicate_ids_are_an_error(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "t.jsonl", {"id": "a", "prompt": "p"},
                       {"id": "b", "prompt": "p"}, {"id": "a", "prompt": "q"})
    with pytest.raises(TaskError, match=r"duplicate task ids: 'a' \(lines 1 and 3\)"):
        load_tasks(path)


def test_folder_names_are_safe_and_distinct() -> None:
    names = {folder_name(i) for i in ("a/b", "a_b", "../..", "", "x" * 500)}
    assert len(names) == 5
    assert all("/" not in name and not name.startswith(".") and len(name) < 90
               for name in names)


def test_results_are_appended_and_read_back(tmp_path: Path) -> None:
    path = tmp_path / "out" / "results.jsonl"
    result = TaskResult("a", Outcome.DONE, final="ok", steps=2,
                        tool_calls=(ToolCallRecord("shell", "ok", 0.1),
                                    ToolCallRecord("save", "error", None, "boom")),
                        tool_errors=1, tokens={"input_tokens": 3})
    with ResultFile(path) as results:
        assert results.finished == frozenset()
        results.append(result)
    with ResultFile(path) as results:
        assert results.finished == {"a"}
        assert TaskResult.from_record(results.records["a"]) == result
    record = json.loads(path.read_text())
    assert record["tool_calls"][1] == {"tool": "save", "outcome": "error", "error": "boom"}


def test_a_torn_last_line_is_set_aside_and_its_task_runs_again(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", {"id": "a", "status": "done"})
    with path.open("a") as handle:
        handle.write('{"id": "b", "status": "do')
    with ResultFile(path) as results:
        assert results.finished == {"a"}
        assert any("torn" in note for note in results.notes)
        results.append(TaskResult("b", Outcome.DONE))
    assert [json.loads(line)["id"] for line in path.read_text().splitlines()] == ["a", "b"]
    [side] = tmp_path.glob("r.jsonl.torn-*")
    assert side.read_text() == '{"id": "b", "status": "do'


def test_unreadable_and_repeated_lines_are_said(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "r.jsonl", {"id": "a", "status": "done"}, "not json",
                       {"id": "a", "status": "error"}, {"no": "id"})
    with ResultFile(path) as results:
        assert results.records["a"]["status"] == "done"
        assert len(results.notes) == 3


def test_one_results_file_takes_one_batch_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "r.jsonl"
    with ResultFile(path), pytest.raises(ResultFileError, match="another fencecall batch"):
        ResultFile(path)
    ResultFile(path).close()  # free again
