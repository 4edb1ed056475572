"""SIGTERM and SIGHUP end a run cleanly: no process, temporary folder or torn log is left."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support import F


def _sleepers(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue
            if cmdline.startswith("sleep") and marker in cmdline:
                found.append(int(entry.name))
    return found


def _scratch() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("fencecall-*")}


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_a_signal_mid_call_kills_the_tools_and_cleans_up(signum: int, sandbox: str,
                                                         tmp_path: Path) -> None:
    marker = f"{4000 + signum}.{len(sandbox)}"
    reply = tmp_path / "reply.md"
    reply.write_text(f"{F}shell\nsleep {marker} & sleep {marker}\n{F}\n")
    before = _scratch()
    proc = subprocess.Popen([sys.executable, "-m", "fencecall.cli.main", "run", "-y",
                             "--sandbox", sandbox, "-w", str(tmp_path / "ws"), str(reply)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while len(_sleepers(marker)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert len(_sleepers(marker)) == 2, "the command never started"
    proc.send_signal(signum)
    assert proc.wait(timeout=20) == 128 + signum
    deadline = time.monotonic() + 5
    while _sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers(marker) == []
    assert _scratch() <= before


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_a_timeout_stops_the_rest_of_the_line_and_the_run_fails(sandbox: str,
                                                                tmp_path: Path) -> None:
    """``sleep 4; echo T > after`` under a 2 s timeout: the echo never runs (bash went on to
    it before), and a one-shot run exits non-zero."""
    workspace = tmp_path / "ws"
    workspace.mkdir()
    reply = tmp_path / "reply.md"
    reply.write_text(f"{F}shell 2\nsleep 4; echo T > after_timeout.txt\n{F}\n")
    done = subprocess.run([sys.executable, "-m", "fencecall.cli.main", "run", "-y",
                           "--sandbox", sandbox, "-w", str(workspace), str(reply)],
                          capture_output=True, text=True, timeout=60)
    assert done.returncode == 1, done.stderr
    assert "Timed out after 2 s" in done.stdout and "sleep 4" in done.stdout
    time.sleep(3)
    assert not (workspace / "after_timeout.txt").exists()


@pytest.mark.parametrize("sandbox", ["workspace-write", "off"])
def test_ctrl_c_stops_the_rest_of_the_line(sandbox: str, tmp_path: Path) -> None:
    marker = f"3.{len(sandbox)}25"  # a sleep of its own to find: 3.1525 s, 3.325 s
    workspace = tmp_path / "ws"
    workspace.mkdir()
    reply = tmp_path / "reply.md"
    reply.write_text(f"{F}shell\nsleep {marker}; echo T > after_interrupt.txt\n{F}\n")
    proc = subprocess.Popen([sys.executable, "-m", "fencecall.cli.main", "run", "-y",
                             "--sandbox", sandbox, "-w", str(workspace), str(reply)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 30
    while not _sleepers(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _sleepers(marker), "the command never started"
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=20) != 0
    time.sleep(float(marker) + 0.5)
    assert not (workspace / "after_interrupt.txt").exists()


def test_a_stop_signal_met_while_a_result_is_handled_still_exits_as_that_signal(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """While a Ray driver waits on its shards, SIGTERM is raised as Ctrl-C's exception; one
    that lands while the command prints a result (the shards' generator waits at its
    ``yield``) ends the command there, and must still exit 143, not Ctrl-C's 130."""
    from fencecall.batch.ray_backend import stop_signals
    from fencecall.cli import _stats_cmd
    from fencecall.cli.main import main

    def shards() -> Iterator[int]:
        with stop_signals():
            yield 1

    def handler(args: object) -> int:
        for _ in shards():  # the caller, handling a result
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        return 0

    monkeypatch.setattr(_stats_cmd, "run", handler)
    kept = {signum: signal.getsignal(signum) for signum in (signal.SIGTERM, signal.SIGHUP)}
    try:
        assert main(["stats"]) == 128 + signal.SIGTERM
    finally:
        for signum, was in kept.items():
            signal.signal(signum, was)
    assert "stopped by SIGTERM" in capsys.readouterr().err
