"""Processes and scratch space the tools leave behind: capped, reaped, cleaned up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from fencecall.batch._runner import Stop
from fencecall.sandbox import scratch
from fencecall.sandbox._processes import SessionAborted
from fencecall.tools.runtime.python_session import PythonSession
from fencecall.tools.runtime.shell_session import ShellSession

from ..processes import alive, running


def test_output_that_would_fill_the_disk_stops_the_command(tmp_path: Path) -> None:
    shell = ShellSession(tmp_path, disk_limit=2 * 1024 * 1024)
    try:
        started = time.monotonic()
        result = shell.run("yes fencecall", timeout=60)
        assert time.monotonic() - started < 30
        assert result.overflowed and not result.timed_out and result.exit_code is None
        assert "cut" in result.stdout  # what was written is still shown, head and tail
        assert shell.run("echo still here").stdout == "still here\n"
    finally:
        shell.close()


def test_the_tool_says_why_the_command_stopped() -> None:
    from fencecall.tools.builtin.shell import format_result
    from fencecall.tools.runtime.shell_session import ShellResult

    text = format_result("yes", ShellResult("y\n", "", None, overflowed=True), 60)
    assert "wrote more than 64 MB of output and was stopped" in text


def test_scratch_of_dead_processes_is_removed(tmp_path: Path) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_pid = int(dead.stdout)
    old = time.time() - 3600
    stale = tmp_path / f"fencecall-shell-{dead_pid}-abc"
    young = tmp_path / f"fencecall-tmp-{dead_pid}-def"
    mine = tmp_path / f"fencecall-shell-{os.getpid()}-ghi"
    unrelated = tmp_path / "fencecall-notes"
    for folder in (stale, young, mine, unrelated):
        (folder / "inner").mkdir(parents=True)
    for folder in (stale, mine, unrelated):
        os.utime(folder, (old, old))
    assert scratch.remove_stale(tmp_path) == [stale]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p.name for p in (young, mine, unrelated))


def test_an_unsandboxed_shell_dies_with_fencecall(tmp_path: Path) -> None:
    child = ("import sys, time\nfrom pathlib import Path\n"
             "from fencecall.tools.runtime.shell_session import ShellSession\n"
             "s = ShellSession(Path(sys.argv[1]))\nprint(s.pid, flush=True)\ntime.sleep(60)\n")
    proc = subprocess.Popen([sys.executable, "-c", child, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    bash = int(proc.stdout.readline())
    assert alive(bash)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    deadline = time.monotonic() + 5
    while alive(bash) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(bash)


def test_an_aborted_shell_ends_its_command_and_never_starts_again(tmp_path: Path) -> None:
    shell = ShellSession(tmp_path)
    try:
        pid = shell.pid
        outcome: list[object] = []
        worker = threading.Thread(target=lambda: outcome.append(_outcome(
            lambda: shell.run("sleep 3131.5", timeout=60))))
        worker.start()
        deadline = time.monotonic() + 30
        while not running("3131.5") and time.monotonic() < deadline:
            time.sleep(0.01)
        shell.abort()  # from another thread, as a batch task's stop does
        worker.join(30)
        assert not worker.is_alive() and not alive(pid) and running("3131.5") == []
        # a dead shell is restarted for the next command, unless it was aborted
        with pytest.raises(SessionAborted, match="shell was stopped"):
            shell.run("sleep 3131.6")
        assert running("3131.6") == []
    finally:
        shell.close()


def test_an_aborted_python_session_never_starts_again(tmp_path: Path) -> None:
    session = PythonSession(tmp_path)
    try:
        assert session.run("1 + 1").result == "2"
        session.abort()
        with pytest.raises(SessionAborted, match="python session was stopped"):
            session.run("1 + 1")
        assert not session.alive()
    finally:
        session.close()


def test_a_stop_outlasts_the_shell_it_killed(tmp_path: Path) -> None:
    """The race that left a command running after a batch was closed: the stop fired while
    the worker was between the model's reply and its command, so the shell it killed was
    started again for the command."""
    stop = Stop()
    shell = ShellSession(tmp_path)
    try:
        stop.watch(shell)
        stop.fire("stopped")
        with pytest.raises(SessionAborted):
            shell.run("sleep 3131.7")
        assert running("3131.7") == []
    finally:
        shell.close()


def _outcome(run: Callable[[], object]) -> object:
    try:
        return run()
    except Exception as err:  # the command's end, or the session's refusal
        return err


def test_a_shell_that_died_with_a_command_unread_still_closes(tmp_path: Path) -> None:
    """What CI once saw after an abort: the command was written into the pipe's buffer of a
    shell that had just died, so closing the pipe flushed it into nothing."""
    shell = ShellSession(tmp_path)
    assert shell._bash is not None
    proc = shell._bash.proc  # white box: the shell's own pipe, as run() leaves it
    assert proc.stdin is not None
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdin.write(b"echo never read\n")  # buffered, not flushed
    shell.close()  # no BrokenPipeError
    assert not alive(proc.pid)
