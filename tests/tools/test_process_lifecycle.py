"""Processes and scratch space the tools leave behind: capped, reaped, cleaned up."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from fencecall.tools.runtime import scratch
from fencecall.tools.runtime.shell_session import ShellSession

from ..processes import alive


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
