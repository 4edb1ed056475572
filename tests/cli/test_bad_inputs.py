"""Bad inputs a new user meets end in a clear error and a usage exit status: never a
traceback, never a silent success, never folders made from the root."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ..fakeserver import FakeModelServer, Reply
from .conftest import cli_env

REPLY = Path(__file__).parents[2] / "examples" / "reply.md"


def fencecall(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI run in ``tmp_path`` with an empty standard input (a pipe)."""
    return subprocess.run([sys.executable, "-m", "fencecall.cli.main", *args],
                          env=cli_env(tmp_path, "http://127.0.0.1:9/v1"), input="",
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)


def refused(result: subprocess.CompletedProcess[str], says: str) -> None:
    assert result.returncode == 2, result.stderr
    assert says in result.stderr
    assert "Traceback" not in result.stderr


def test_a_mistyped_tool_names_the_nearest(tmp_path: Path) -> None:
    refused(fencecall(tmp_path, "run", "-y", "-t", "shel", "-w", "ws", str(REPLY)),
            "unknown tool 'shel'; did you mean shell?")
    refused(fencecall(tmp_path, "run", "-y", "-t", "hint:nonsense", "-w", "ws",
                      str(REPLY)), "no tool has the hint 'nonsense'; known: ")


@pytest.mark.parametrize("where, says", [
    ("missing/deep/ws", "does not exist and neither does its folder"),
    ("a-file", "is not a folder"),
    ("/proc/self", "is in a kernel folder"),
])
def test_a_workspace_that_cannot_be_one(tmp_path: Path, where: str, says: str) -> None:
    (tmp_path / "a-file").write_text("kept\n")
    refused(fencecall(tmp_path, "run", "-y", "-w", where, str(REPLY)), says)
    assert not (tmp_path / "missing").exists()
    assert (tmp_path / "a-file").read_text() == "kept\n"


def test_a_missing_last_folder_is_made(tmp_path: Path) -> None:
    result = fencecall(tmp_path, "run", "-y", "--sandbox", "off", "-w", "new", str(REPLY))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "new").is_dir()


@pytest.mark.parametrize("output", ["text", "json"])
def test_an_empty_piped_prompt(tmp_path: Path, output: str) -> None:
    result = fencecall(tmp_path, "--model", "local/m", "--output-format", output,
                       "-w", "ws")
    refused(result, "no prompt: standard input was empty")
    assert not (tmp_path / "home" / "conversations").exists() or not any(
        (tmp_path / "home" / "conversations").iterdir())


def test_no_tasks_is_an_error_and_tasks_come_on_stdin(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("\n")
    refused(fencecall(tmp_path, "batch", "empty.jsonl", "--out", "r.jsonl"),
            "empty.jsonl: no tasks")
    refused(fencecall(tmp_path, "batch", "-", "--out", "r.jsonl"), "standard input: no tasks")
    with FakeModelServer([Reply("Nothing to do.")]) as server:
        result = subprocess.run(
            [sys.executable, "-m", "fencecall.cli.main", "batch", "-", "--out", "r.jsonl",
             "--model", "local/m", "-y", "--sandbox", "off"],
            env=cli_env(tmp_path, server.openai_url), input='{"id": "a", "prompt": "hi"}\n',
            capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    [line] = (tmp_path / "r.jsonl").read_text().splitlines()
    assert json.loads(line)["id"] == "a"


def test_acp_with_files_for_stdin_and_stdout(tmp_path: Path) -> None:
    request = {"jsonrpc": "2.0", "id": 0, "method": "initialize",
               "params": {"protocolVersion": 1}}
    (tmp_path / "in.jsonl").write_text(json.dumps(request) + "\n")
    for source, answers in (("in.jsonl", 1), ("/dev/null", 0)):
        with open(tmp_path / source) as stdin, (tmp_path / "out.jsonl").open("w") as stdout:
            result = subprocess.run([sys.executable, "-m", "fencecall.cli.main", "acp"],
                                    env=cli_env(tmp_path, "http://127.0.0.1:9/v1"),
                                    stdin=stdin, stdout=stdout, stderr=subprocess.PIPE,
                                    text=True, timeout=60)
        assert result.returncode == 0 and "Traceback" not in result.stderr, result.stderr
        lines = (tmp_path / "out.jsonl").read_text().splitlines()
        assert len(lines) == answers
        assert all(json.loads(line)["result"]["protocolVersion"] == 1 for line in lines)
