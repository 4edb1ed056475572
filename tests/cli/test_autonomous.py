"""``--autonomous`` end to end: the real CLI in a subprocess against the fake model server.

A one-shot prompt or a batch task whose replies are non-answers (``TH``, a ``THOUGHT:``
cut short) gets reminders and ends done only at a complete call; without the mode the first
such reply ends it. An interactive chat refuses the flag.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
from pathlib import Path

import pytest

from fencecall.cli.main import main

from ..fakeserver import FakeModelServer, Reply
from ..support import F
from .conftest import CLI, cli_env, log_of

SUMMARY = "Printed hello with the shell."


def replies() -> list[Reply]:
    return [Reply("TH"), Reply("THOUGHT: `"), Reply(f"{F}shell\necho hello\n{F}\n"),
            Reply(f"{F}complete\n{SUMMARY}\n{F}\n")]


def configure(tmp_path: Path, text: str) -> None:
    config = tmp_path / "config" / "fencecall" / "config.toml"  # where cli_env points
    config.parent.mkdir(parents=True, exist_ok=True)
    config.write_text(text)


def test_a_one_shot_run_ends_only_at_complete(fencecall: CLI, tmp_path: Path) -> None:
    with FakeModelServer(replies()) as server:
        result = fencecall("--autonomous", "-y", "--sandbox", "off", "--model", "local/m",
                           "--name", "auto", "say hello", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 4
    assert "did not call complete" in result.stdout and SUMMARY in result.stdout
    system_prompt = server.requests[0].body["messages"][0]["content"]
    assert "does not end the task" in system_prompt and f"{F}complete" in system_prompt
    second = server.requests[1].body["messages"][-1]
    assert "did not call complete" in second["content"]
    assert f"{F}complete\nA short summary of what was done.\n{F}" in second["content"]
    records = log_of(tmp_path, "auto")
    reminders = [r for r in records if r.get("metadata", {}).get("reminder") is True]
    assert len(reminders) == 2 and all(r["role"] == "system" for r in reminders)
    last = records[-1]
    assert (last["content"], last["metadata"]["tool"], last["metadata"]["complete"]) == (
        SUMMARY, "complete", True)


def test_without_the_mode_the_first_non_answer_ends_the_run(fencecall: CLI,
                                                            tmp_path: Path) -> None:
    """The same replies, with and without the flag: ``TH`` ends the plain run as its answer."""
    with FakeModelServer(replies()) as server:
        result = fencecall("-y", "--sandbox", "off", "--model", "local/m", "--name", "plain",
                           "say hello", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 1
    assert [r["content"] for r in log_of(tmp_path, "plain")] == ["say hello", "TH"]
    assert f"{F}complete" not in server.requests[0].body["messages"][0]["content"]
    with FakeModelServer(replies()) as server:
        result = fencecall("--autonomous", "-y", "--sandbox", "off", "--model", "local/m",
                           "--name", "autonomous", "say hello", base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 4
    assert log_of(tmp_path, "autonomous")[-1]["content"] == SUMMARY


def test_non_answers_only_give_up_after_the_reminders(fencecall: CLI, tmp_path: Path) -> None:
    with FakeModelServer([Reply("TH")] * 5) as server:
        result = fencecall("--autonomous", "--model", "local/m", "--name", "stuck",
                           "say hello", base_url=server.openai_url)
    assert result.returncode == 6, result.stderr  # gave up
    assert len(server.requests) == 3  # feedback_limit = 3, the default
    records = log_of(tmp_path, "stuck")
    assert sum(r.get("metadata", {}).get("reminder") is True for r in records) == 3
    assert records[-1]["metadata"] == {"ending": "gave-up"}


def test_the_config_key_makes_one_shot_runs_autonomous(fencecall: CLI, tmp_path: Path) -> None:
    configure(tmp_path, "autonomous = true\n")
    with FakeModelServer(replies()) as server:
        result = fencecall("-y", "--sandbox", "off", "--model", "local/m", "say hello",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 4 and SUMMARY in result.stdout
    with FakeModelServer(replies()) as server:
        result = fencecall("--no-autonomous", "--model", "local/m", "say hello",
                           base_url=server.openai_url)
    assert result.returncode == 0, result.stderr
    assert len(server.requests) == 1


def test_an_interactive_chat_refuses_the_flag(monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str],
                                              tmp_path: Path) -> None:
    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("FENCECALL_HOME", str(tmp_path / "home"))
    monkeypatch.setattr(sys, "stdin", Terminal())
    assert main(["chat", "--autonomous", "--model", "local/m"]) == 2
    said = capsys.readouterr().err
    assert "--autonomous is for a prompt" in said and "you decide when the task is done" in said
    assert not (tmp_path / "home" / "conversations").exists()


def test_complete_loads_when_named_and_never_by_default(fencecall: CLI,
                                                        tmp_path: Path) -> None:
    configure(tmp_path, "autonomous = true\n")  # commands without --autonomous ignore it
    listed = fencecall("tools", base_url="http://127.0.0.1:9")
    assert listed.returncode == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if line.startswith("complete")]
    assert "read-only" in row and "no: off by default" in row
    named = fencecall("tools", "--tools", "shell,complete", base_url="http://127.0.0.1:9")
    [row] = [line for line in named.stdout.splitlines() if line.startswith("complete")]
    assert row.rstrip().endswith("yes")


def test_a_batch_task_ends_done_only_at_complete(tmp_path: Path) -> None:
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(json.dumps({"id": "hello", "prompt": "say hello"}) + "\n")
    out = tmp_path / "results.jsonl"
    with FakeModelServer(replies()) as server:
        done = subprocess.run(
            [sys.executable, "-m", "fencecall.cli.main", "batch", str(tasks), "--out",
             str(out), "-m", "local/fake", "-y", "--sandbox", "off", "--autonomous"],
            env=cli_env(tmp_path, server.openai_url), capture_output=True, text=True,
            timeout=120)
    assert done.returncode == 0, done.stderr
    [result] = [json.loads(line) for line in out.read_text().splitlines()]
    assert (result["status"], result["final"], result["steps"]) == ("done", SUMMARY, 4)
    assert [call["tool"] for call in result["tool_calls"]] == ["shell", "complete"]
