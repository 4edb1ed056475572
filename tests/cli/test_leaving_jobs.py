"""Leaving a chat with background jobs running: they are listed and the person asked; a
conversation resumed later tells the model they were stopped (the real CLI in a pty)."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pexpect

from ..fakeserver import FakeModelServer, Reply
from ..processes import running
from ..support import F
from .conftest import cli_env

SRC = str(Path(__file__).resolve().parents[2] / "src")
MARKER = "987.25"
"""The job's distinctive argument (``sleep 987.25``), to find its process."""


def gone(within: float) -> bool:
    deadline = time.monotonic() + within
    while running(MARKER) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running(MARKER) == []


def test_leaving_lists_the_running_jobs_asks_and_a_resume_tells_the_model_they_stopped(
        tmp_path: Path, workspace: Path) -> None:
    replies = [Reply(f"Starting it.\n{F}shell\nsleep {MARKER}\n{F}\n"),
               Reply("It runs as job 1."), Reply("Still here."), Reply("Understood.")]
    env = cli_env(tmp_path, "", TERM="xterm", NO_COLOR="1", PROMPT_TOOLKIT_NO_CPR="1",
                  PYTHONPATH=SRC)
    with FakeModelServer(replies) as server:
        env["FENCECALL_LOCAL_BASE_URL"] = server.openai_url
        child = pexpect.spawn(sys.executable, [
            "-m", "fencecall.cli.main", "--model", "local/m", "--name", "left", "-y",
            "--sandbox", "off", "--background-after", "1", "-w", str(workspace)],
            env=env, encoding="utf-8", timeout=30, dimensions=(50, 200))
        try:
            child.expect("Ctrl-D to leave")
            child.sendline("start a long sleep")
            child.expect("It runs as job 1.")
            child.sendline("/exit")
            child.expect(rf"1  running for \d+ s  `sleep {MARKER}`")
            child.expect(r"Leaving stops it\. Stop and leave\? \[y/N\]")
            child.sendline("n")  # stay
            child.sendline("are you there?")
            child.expect("Still here.")
            child.expect(r"\d+ in · \d+ out tokens")
            assert running(MARKER)
            time.sleep(0.5)  # the prompt is back (a Ctrl-D before it would be lost)
            child.send("\x04")  # Ctrl-D asks too
            child.expect(r"Stop and leave\? \[y/N\]")
            child.sendline("y")
            child.expect(pexpect.EOF)
        finally:
            child.close(force=True)
        assert gone(within=5)
        resumed = subprocess.run(
            [sys.executable, "-m", "fencecall.cli.main", "--model", "local/m", "--resume",
             "left", "-w", str(workspace), "what about the sleep?"],
            env=env, capture_output=True, text=True, timeout=60)
    assert resumed.returncode == 0, resumed.stderr
    told = [m["content"] for m in server.requests[-1].body["messages"]]
    notices = [text for text in told if "Background job 1" in str(text)]
    assert len(notices) == 1 and ("Background job 1 was stopped when the conversation was "
                                  "left earlier; it is not running now.") in notices[0]
    assert told.index(notices[0]) == len(told) - 2  # just before the new prompt
