"""Stopping the python tool's code, with real interpreters, with and without the sandbox.

A timeout, Ctrl-C or an output flood must stop the whole block: code that catches the
KeyboardInterrupt must not run on, and no process, thread or file write the code started
may outlive the stop. What comes back from the interpreter (its output files and the
messages on its reply pipe) must stay bounded whatever the code writes.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from fencecall.sandbox._bwrap import Sandbox, SandboxPolicy
from fencecall.tools.builtin.python import format_result
from fencecall.tools.runtime.python_session import STOP_SIGNAL, PythonResult, PythonSession

from ..processes import running
from ..support import needs_bwrap

POLICIES = [
    pytest.param(SandboxPolicy.OFF, id="unsandboxed"),
    pytest.param(SandboxPolicy.WORKSPACE_WRITE, id="sandboxed", marks=needs_bwrap),
]

CATCHES = """\
import time
try:
    try:
        time.sleep(10)
    except BaseException:
        open('inner.txt', 'w').write('T')
except BaseException:
    pass
open('after.txt', 'w').write('T')
"""
"""Catches the interrupt twice over, then writes: none of the writes may happen."""

SPAWNS = """\
import os, subprocess, threading, time
subprocess.Popen(['sh', '-c', 'sleep 1.5; touch popen.txt', '{marker}'])
os.system("sh -c 'sleep 1.5; touch orphan.txt' {marker} &")
def later():
    time.sleep(1.5)
    open('thread.txt', 'w').write('T')
threading.Thread(target=later).start()
try:
    os.system("sleep 1.5; touch system.txt")
except BaseException:
    pass
open('after.txt', 'w').write('T')
"""
"""Starts a child, an orphan (``&`` in a shell that exits), a thread, and a foreground
command (``system()`` ignores SIGINT while it waits), then writes."""
WRITES = ("popen.txt", "orphan.txt", "thread.txt", "system.txt", "after.txt")


@pytest.fixture(params=POLICIES)
def python(request: pytest.FixtureRequest, workspace: Path) -> Iterator[PythonSession]:
    session = PythonSession(workspace, sandbox=Sandbox(request.param, (workspace,)))
    yield session
    session.close()


def _nothing_ran_on(workspace: Path, names: tuple[str, ...], marker: str | None = None,
                    wait: float = 0.0) -> None:
    """Wait ``wait`` seconds (until what the code started would have written), then check
    that nothing was written and no marked process runs."""
    time.sleep(wait)
    assert [name for name in names if (workspace / name).exists()] == []
    if marker is not None:
        assert running(marker) == []


def test_a_timeout_stops_code_that_catches_the_interrupt(python: PythonSession,
                                                         workspace: Path) -> None:
    python.run("kept = 41")
    started = time.monotonic()
    result = python.run(CATCHES, timeout=0.5)
    assert time.monotonic() - started < 4
    assert result.timed_out and result.restarted is None, result
    assert result.error is not None and "KeyboardInterrupt" in result.error
    _nothing_ran_on(workspace, ("inner.txt", "after.txt"))
    assert python.run("kept + 1").result == "42"  # it stopped in time: the namespace is kept


def test_a_timeout_kills_every_process_and_thread_the_code_started(
        python: PythonSession, workspace: Path) -> None:
    marker = f"fencecall-stop-{os.getpid()}-{time.monotonic_ns()}"
    result = python.run(SPAWNS.format(marker=marker), timeout=0.5)
    assert result.timed_out and result.killed >= 2, result
    assert result.restarted is not None and "thread" in result.restarted
    _nothing_ran_on(workspace, WRITES, marker, wait=1.7)
    assert python.run("1 + 1").result == "2"


def test_ctrl_c_stops_the_code_and_its_processes_and_still_propagates(
        python: PythonSession, workspace: Path) -> None:
    python.run("kept = 41")
    marker = f"fencecall-stop-{os.getpid()}-{time.monotonic_ns()}"
    code = (f"import subprocess\nsubprocess.Popen(['sh', '-c', 'sleep 1.5; touch popen.txt',"
            f" '{marker}'])\n{CATCHES}")
    timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT))
    timer.start()
    with pytest.raises(KeyboardInterrupt):
        python.run(code, timeout=30)
    timer.join()
    _nothing_ran_on(workspace, ("popen.txt", "inner.txt", "after.txt"), marker, wait=1.7)
    assert python.run("kept + 1").result == "42"


def test_the_result_says_what_was_stopped() -> None:
    stopped = PythonResult("", "", None, "KeyboardInterrupt", timed_out=True, killed=2)
    text = format_result(stopped, 5)
    assert ("Timed out after 5 s; the code was stopped (the rest of the block did not run) "
            "and the 2 processes it started were killed.") in text
    text = format_result(stopped, 5, time_limit=True)
    assert "The run's time limit ended the code after 5 s; the code was stopped" in text
    flooded = PythonResult("x", "", None, None, overflowed=True)
    assert "wrote more than 64 MB of output; the code was stopped" in format_result(flooded, 5)


FLOOD = """\
import json, os, sys, threading, time
from pathlib import Path
from fencecall.tools.runtime.python_session import PythonSession

def peak():
    # VmHWM, this image's own peak: getrusage's ru_maxrss keeps the parent's size across
    # fork and exec, and pytest's grows large over a whole suite
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024

session = PythonSession(Path(sys.argv[1]))
biggest = 0
def watch():
    global biggest
    while True:
        biggest = max(biggest, os.fstat(session._out).st_size)
        time.sleep(0.002)
threading.Thread(target=watch, daemon=True).start()
started = time.monotonic()
result = session.run(sys.argv[2], timeout=float(sys.argv[3]))
print(json.dumps({"seconds": time.monotonic() - started, "biggest": biggest,
                  "overflowed": getattr(result, "overflowed", False),
                  "stdout": len(result.stdout), "result": len(result.result or ""),
                  "restarted": result.restarted,
                  "rss": peak()}))
session.close()
"""
MIB = 1 << 20


def _flood(workspace: Path, code: str, timeout: float) -> dict[str, object]:
    """What fencecall's side saw of running ``code``, from a process of its own (so that its
    peak memory is the session's alone)."""
    done = subprocess.run([sys.executable, "-c", FLOOD, str(workspace), code, str(timeout)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    report: dict[str, object] = json.loads(done.stdout)
    return report


def test_an_output_flood_is_stopped_and_read_head_and_tail(workspace: Path) -> None:
    report = _flood(workspace, "import sys\nchunk = 'x' * (1 << 20)\n"
                               "for _ in range(2048): sys.stdout.write(chunk)", timeout=60)
    assert report["overflowed"] is True, report
    # the size is watched every quarter second: at disk speed it overshoots the 64 MiB a bit
    assert isinstance(report["biggest"], int) and 64 * MIB < report["biggest"] < 1024 * MIB
    assert isinstance(report["stdout"], int) and report["stdout"] < 20_000
    assert isinstance(report["rss"], int) and report["rss"] < 150 * MIB, report


def test_a_flood_on_the_reply_pipe_restarts_the_interpreter(workspace: Path) -> None:
    code = ("import os, sys, time\nchunk = b'x' * (1 << 20)\n"
            "for _ in range(768): os.write(int(sys.argv[2]), chunk)\ntime.sleep(60)")
    report = _flood(workspace, code, timeout=20)
    assert isinstance(report["seconds"], float) and report["seconds"] < 10, report
    assert isinstance(report["restarted"], str) and "reply" in report["restarted"]
    assert isinstance(report["rss"], int) and report["rss"] < 150 * MIB, report


def test_a_huge_result_is_cut_in_the_interpreter(python: PythonSession) -> None:
    result = python.run("'x' * 50_000_000")
    assert result.result is not None and len(result.result) < 20_000
    assert result.result.startswith("'xxx") and result.result.endswith("xxx'")
    assert "characters cut" in result.result


def test_a_garbled_reply_restarts_the_interpreter(python: PythonSession) -> None:
    python.run("kept = 1")
    result = python.run("import os, sys\nos.write(int(sys.argv[2]), b'not json\\n')\n"
                        "import time\ntime.sleep(30)", timeout=20)
    assert result.restarted is not None and "reply" in result.restarted
    assert python.run("1 + 1").result == "2"


TICKS = """\
import signal, time
def tick(*_):
    open('ticks.txt', 'a').write('t')
for signum in (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF):
    signal.signal(signum, tick)
signal.signal(signal.SIGTERM, signal.SIG_IGN)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGWINCH})
signal.alarm(100)
signal.setitimer(signal.ITIMER_VIRTUAL, 50, 50)
signal.setitimer(signal.ITIMER_PROF, 50, 50)
signal.setitimer(signal.ITIMER_REAL, 0.1, 0.1)
time.sleep(100)
"""
"""Sets every interval timer, with handlers that write, changes two more signals, then sleeps."""
SIGNAL_STATE = """\
import signal
([signal.getitimer(w) for w in (signal.ITIMER_REAL, signal.ITIMER_VIRTUAL, signal.ITIMER_PROF)],
 signal.alarm(0),
 [signal.getsignal(s).name for s in (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF,
                                     signal.SIGTERM)],
 signal.SIGWINCH in signal.pthread_sigmask(signal.SIG_BLOCK, ()))
"""
CLEAN = ("([(0.0, 0.0), (0.0, 0.0), (0.0, 0.0)], 0, ['SIG_DFL', 'SIG_DFL', 'SIG_DFL', "
         "'SIG_DFL'], False)")


def _ticks(workspace: Path) -> int:
    """How many times the code's signal handler ran."""
    path = workspace / "ticks.txt"
    return len(path.read_text()) if path.exists() else 0


def test_a_stop_cancels_the_codes_timers_and_restores_its_signals(
        python: PythonSession, workspace: Path) -> None:
    """A timer's handler is code of the block too: it must not tick on after the stop, nor
    may the handlers and mask the block changed outlive it; the namespace is kept."""
    python.run("kept = 41")
    result = python.run(TICKS, timeout=0.5)
    assert result.timed_out and result.restarted is None, result
    ticks = _ticks(workspace)
    assert ticks >= 2  # the handler ran while the code did
    time.sleep(0.5)
    assert _ticks(workspace) == ticks  # and nothing of it after the stop
    assert python.run(SIGNAL_STATE).result == CLEAN
    assert python.run("kept + 1").result == "42"


def test_a_timer_set_on_purpose_outlives_a_block_that_ended(python: PythonSession,
                                                            workspace: Path) -> None:
    """The cleanup is for stopped blocks only: a timer the model sets to use later is legal."""
    python.run(TICKS.replace("time.sleep(100)", "None"))
    time.sleep(0.35)
    assert _ticks(workspace) >= 2  # only a stop cleans up: the next block may rely on it
    python.run("signal.setitimer(signal.ITIMER_REAL, 0)")


DEFIANCES = [
    pytest.param(f"signal.pthread_sigmask(signal.SIG_BLOCK, {{signal.{STOP_SIGNAL.name}}})",
                 "blocked", id="blocks"),
    pytest.param(f"signal.signal(signal.{STOP_SIGNAL.name}, signal.SIG_IGN)", "ignored",
                 id="ignores"),
    pytest.param(f"signal.signal(signal.{STOP_SIGNAL.name}, lambda *_: None)", "not taken",
                 id="replaces"),
]


@pytest.mark.parametrize(("defiance", "said"), DEFIANCES)
def test_code_that_defies_the_stop_signal_is_frozen_at_once(
        python: PythonSession, workspace: Path, defiance: str, said: str) -> None:
    """Code that keeps the driver's stop handler from running must not get the grace to run
    on in: with no acknowledgement it is frozen and killed, and the result says why."""
    python.run("kept = 41")
    code = (f"import signal, time\n{defiance}\n"
            "while True:\n    open('defied.txt', 'a').write('.')\n    time.sleep(0.01)")
    started = time.monotonic()
    result = python.run(code, timeout=0.5)
    assert time.monotonic() - started < 1.3, result  # not the whole grace
    assert result.timed_out and result.restarted is not None, result
    assert said in result.restarted and "variables are gone" in result.restarted
    written = (workspace / "defied.txt").stat().st_size
    time.sleep(0.2)
    assert (workspace / "defied.txt").stat().st_size == written
    assert python.run("'kept' in globals()").result == "False"
