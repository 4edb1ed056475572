"""Background jobs end to end: the real CLI against the scripted model server.

A server the model starts becomes a job and is reachable from later calls; a long command is
waited on in fencecall, with no polling requests; a job ending between turns is reported;
no job outlives the run, not even ``kill -9`` of fencecall.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from ..fakeserver import FakeModelServer, Reply
from ..ports import free_port
from ..processes import running
from ..support import F, needs_bwrap
from .conftest import CLI, cli_env, log_of

SANDBOXES = [pytest.param("workspace-write", marks=needs_bwrap), "off"]


def shell(command: str) -> Reply:
    return Reply(f"Running it.\n{F}shell\n{command}\n{F}\n")


def fetch(port: int) -> str:
    return (f"python3 -c \"import urllib.request, time\nfor _ in range(50):\n try:\n"
            f"  print(urllib.request.urlopen('http://127.0.0.1:{port}/').read()[:200]); "
            f"break\n except OSError: time.sleep(0.1)\"")


def results(tmp_path: Path, name: str) -> list[dict[str, Any]]:
    return [r for r in log_of(tmp_path, name) if r["role"] == "system"]


def gone(marker: str, within: float) -> bool:
    deadline = time.monotonic() + within
    while running(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    return running(marker) == []


@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_a_server_the_model_starts_is_a_job_its_later_calls_reach(
        sandbox: str, fencecall: CLI, tmp_path: Path) -> None:
    port = free_port()
    replies = [shell(f"python3 -m http.server {port} --bind 127.0.0.1"), shell(fetch(port)),
               Reply("The server answers.")]
    with FakeModelServer(replies) as server:
        done = fencecall("-y", "--sandbox", sandbox, "--model", "local/m", "--name", "srv",
                         "--background-after", "2", "serve the folder",
                         base_url=server.openai_url)
    assert done.returncode == 0, done.stderr
    started, fetched = results(tmp_path, "srv")
    assert started["metadata"]["job"] == 1
    assert started["metadata"]["duration_s"] < 2 + 2
    assert "Directory listing" in fetched["content"], fetched["content"]
    assert gone(str(port), within=2)  # the run ended: so did its job


@pytest.mark.parametrize("signum", [signal.SIGKILL, signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("sandbox", SANDBOXES)
def test_kill_9_sigterm_or_ctrl_c_of_fencecall_ends_its_jobs(
        sandbox: str, signum: int, tmp_path: Path, workspace: Path) -> None:
    port = free_port()
    replies = [shell(f"python3 -m http.server {port} --bind 127.0.0.1"),
               Reply("thinking for a long while", latency=120)]
    with FakeModelServer(replies) as server:
        proc = subprocess.Popen(
            [sys.executable, "-m", "fencecall.cli.main", "-y", "--sandbox", sandbox,
             "--model", "local/m", "--background-after", "1", "-w", str(workspace),
             "serve the folder"],
            env=cli_env(tmp_path, server.openai_url), stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while len(server.requests) < 2 and time.monotonic() < deadline:
                time.sleep(0.05)
            assert len(server.requests) == 2, "the server never became a job"
            assert running(str(port))
            proc.send_signal(signum)
            proc.wait(timeout=10)
            assert gone(str(port), within=2)
        finally:
            if proc.poll() is None:
                proc.kill()


def test_a_long_command_is_waited_on_without_polling(fencecall: CLI, tmp_path: Path) -> None:
    replies = [shell("sleep 8; echo done"), Reply(f"{F}jobs wait 1 30\n{F}\n"),
               Reply("It printed done.")]
    with FakeModelServer(replies) as server:
        done = fencecall("-y", "--sandbox", "off", "--model", "local/m", "--name", "wait",
                         "--background-after", "2", "sleep then say done",
                         base_url=server.openai_url)
    assert done.returncode == 0, done.stderr
    assert len(server.requests) == 3  # one request per call, no polling
    started, waited = results(tmp_path, "wait")
    assert "as job 1" in started["content"]
    assert "ended after 8 s" in waited["content"] and "done" in waited["content"]
    assert "Exit code: 0" in waited["content"]


def test_a_command_put_in_the_background_keeps_its_output(fencecall: CLI,
                                                          tmp_path: Path) -> None:
    replies = [shell("(sleep 1; echo from the background) & echo at once"),
               Reply(f"{F}jobs wait 1 10\n{F}\n"), Reply("Both printed.")]
    with FakeModelServer(replies) as server:
        begun = time.monotonic()
        done = fencecall("-y", "--sandbox", "off", "--model", "local/m", "--name", "amp",
                         "print twice", base_url=server.openai_url)
    assert done.returncode == 0, done.stderr
    assert time.monotonic() - begun < 15
    started, waited = results(tmp_path, "amp")
    assert "at once" in started["content"] and started["metadata"]["duration_s"] < 1
    assert "from the background" in waited["content"]


def test_a_job_that_ends_between_turns_is_reported(fencecall: CLI, tmp_path: Path) -> None:
    replies = [shell("sleep 2; exit 4"), Reply(f"{F}shell 10\nsleep 3\n{F}\n"),
               Reply("Noted.")]
    with FakeModelServer(replies) as server:
        done = fencecall("-y", "--sandbox", "off", "--model", "local/m", "--name", "told",
                         "--background-after", "1", "work", base_url=server.openai_url)
    assert done.returncode == 0, done.stderr
    last = server.requests[2].body["messages"]
    notices = [m["content"] for m in last if "Background job 1" in str(m["content"])]
    assert len(notices) == 1 and "exit code 4" in notices[0]
    stats = fencecall("stats", "--json", base_url=server.openai_url)
    assert '"started": 1' in stats.stdout and '"ended": 1' in stats.stdout

