"""The reaper bash runs under: nothing bash starts outlives it, fencecall, or a crash."""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fencecall.sandbox import _processes as processes
from fencecall.sandbox import reaper
from fencecall.sandbox._processes import start_process

from ..processes import alive, running

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"),
                                reason="the reaper needs Linux (prctl, /proc)")

Shell = Callable[[], subprocess.Popen[bytes]]


def escaping(token: str) -> str:
    """Background processes that leave bash's job table, process group, session or tree."""
    return (f"sleep 300.{token} & nohup sleep 301.{token} >/dev/null 2>&1 & "
            f"setsid sleep 302.{token} & (sleep 303.{token} &) & "
            f"(setsid sleep 304.{token} & ) & "
            f"bash -c 'setsid bash -c \"sleep 305.{token} & sleep 306.{token}\" &' &\n")


ESCAPING = 8
"""The processes of :func:`escaping` that stay: its sleeps, and the setsid bash of two."""


def wait_for(check: Callable[[], bool], timeout: float = 5.0) -> bool:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.02)
    return True


def live(token: str) -> list[int]:
    return [pid for pid in running(f".{token}") if alive(pid)]


@pytest.fixture
def token() -> Iterator[str]:
    """A marker for the sleeps a test starts; whatever is left of them is killed after it."""
    token = str(secrets.randbelow(10**9))
    yield token
    for pid in running(f".{token}"):
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.fixture(params=["compiled", "script"])
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The reaper this process starts: the compiled one (where the build made it) or the
    Python script, which must behave alike."""
    if request.param == "script":
        monkeypatch.setattr(reaper, "PROGRAM", None)
    elif reaper._compiled() is None:
        pytest.skip("the compiled reaper was not built here")
    return str(request.param)


@pytest.fixture
def shell(implementation: str) -> Iterator[Shell]:
    """Starts bash under a reaper as fencecall does; what it started is killed after."""
    started: list[subprocess.Popen[bytes]] = []

    def start() -> subprocess.Popen[bytes]:
        argv = reaper.reaped(["bash", "--noprofile", "--norc"],
                             f"fencecall-shell-{os.getpid()}-test")
        proc = start_process(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, start_new_session=True, reaper=True)
        started.append(proc)
        return proc

    yield start
    for proc in started:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                stream.close()


def send(proc: subprocess.Popen[bytes], line: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(line.encode())
    proc.stdin.flush()


def answer(proc: subprocess.Popen[bytes], line: str) -> str:
    send(proc, line)
    assert proc.stdout is not None
    return proc.stdout.readline().decode()


def test_the_child_sees_its_owner_and_default_signals(shell: Shell) -> None:
    proc = shell()
    assert answer(proc, "echo $FENCECALL_REAPER\n") == f"fencecall-shell-{os.getpid()}-test\n"
    # python ignores SIGPIPE and the reaper blocks signals: neither reaches bash
    assert answer(proc, "grep SigBlk /proc/self/status\n").split()[1] == "0" * 16
    assert answer(proc, "yes | head -c0; echo ${PIPESTATUS[0]}\n") == f"{128 + 13}\n"
    assert answer(proc, "echo $PPID\n") == f"{proc.pid}\n"
    # only bash holds the pipes: fencecall sees its end-of-file and its broken pipe
    assert [os.readlink(f"/proc/{proc.pid}/fd/{fd}") for fd in (0, 1, 2)] == ["/dev/null"] * 3


def test_everything_dies_when_bash_exits(shell: Shell, token: str) -> None:
    proc = shell()
    send(proc, escaping(token))
    assert wait_for(lambda: len(live(token)) == ESCAPING)
    send(proc, "(exit 7)\n")
    assert proc.stdin is not None
    proc.stdin.close()
    started = time.monotonic()
    assert proc.wait(timeout=2) == 7
    assert proc.stdout is not None  # nothing holds bash's stdout any more: end-of-file
    assert select.select([proc.stdout], [], [], 2)[0] and proc.stdout.read() == b""
    assert wait_for(lambda: not live(token), timeout=2 - (time.monotonic() - started))


@pytest.mark.parametrize(("line", "status"), [("kill -9 $$\n", 128 + 9),
                                              ("exec /nonexistent/program\n", 127)])
def test_the_reaper_exits_with_bash_status(shell: Shell, line: str, status: int) -> None:
    proc = shell()
    send(proc, line)
    assert proc.wait(timeout=5) == status


def test_the_argv_names_the_reaper_that_runs(shell: Shell, implementation: str) -> None:
    proc = shell()
    assert answer(proc, "echo up\n") == "up\n"  # the reaper runs bash
    argv = reaper.reaped(["true"], "fencecall-shell-1-test")
    assert (argv[0] == str(reaper.PROGRAM)) == (implementation == "compiled")
    setting = f"{reaper.VARIABLE}=fencecall-shell-{os.getpid()}-test"
    assert reaper._is_reaper(proc.pid, setting)  # the sweep spares what it is above
    assert not reaper._is_reaper(proc.pid, f"{reaper.VARIABLE}=fencecall-shell-1-other")
    assert not reaper._is_reaper(reaper.tree(proc.pid)[0], setting)  # bash


def test_a_program_that_cannot_run_exits_127(tmp_path: Path, implementation: str) -> None:
    argv = reaper.reaped([str(tmp_path / "missing")], "fencecall-shell-1-test")
    done = subprocess.run(argv, capture_output=True, timeout=10)
    assert done.returncode == 127
    assert b"cannot run" in done.stderr


def test_everything_dies_when_the_reaper_is_terminated(shell: Shell, token: str) -> None:
    proc = shell()
    send(proc, escaping(token))
    assert wait_for(lambda: len(live(token)) == ESCAPING)
    bash = reaper.tree(proc.pid)
    proc.send_signal(signal.SIGTERM)
    started = time.monotonic()
    assert proc.wait(timeout=2) == 128 + signal.SIGTERM
    assert wait_for(lambda: not live(token) and not any(map(alive, bash)),
                    timeout=2 - (time.monotonic() - started))


def test_everything_dies_when_fencecall_is_killed(token: str) -> None:
    owner = ("import os, subprocess, sys, time\n"
             "from fencecall.sandbox._processes import start_process\n"
             "from fencecall.sandbox.reaper import reaped\n"
             "argv = reaped(['bash', '--noprofile', '--norc'],\n"
             "              f'fencecall-shell-{os.getpid()}-test')\n"
             "proc = start_process(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,\n"
             "                     stderr=subprocess.DEVNULL, start_new_session=True,\n"
             "                     reaper=True)\n"
             "proc.stdin.write(os.environ['ESCAPING'].encode() + b'echo started\\n')\n"
             "proc.stdin.flush()\n"
             "proc.stdout.readline()\n"
             "print(proc.pid, flush=True)\n"
             "time.sleep(60)\n")
    parent = subprocess.Popen([sys.executable, "-c", owner], stdout=subprocess.PIPE, text=True,
                              env={**os.environ, "ESCAPING": escaping(token)})
    try:
        assert parent.stdout is not None
        reaper_pid = int(parent.stdout.readline())
        assert wait_for(lambda: len(live(token)) == ESCAPING)
        below = reaper.tree(reaper_pid)
    finally:
        parent.kill()
        parent.wait()
    assert wait_for(lambda: not live(token) and not any(map(alive, [reaper_pid, *below])),
                    timeout=2)


def test_a_reaper_whose_parent_is_gone_runs_nothing(tmp_path: Path, token: str,
                                                    implementation: str) -> None:
    """Started by a process other than the one that built the argv (here, setsid's fork):
    as when fencecall dies before the reaper set its parent-death signal."""
    ran = tmp_path / "ran"
    argv = reaper.reaped(["bash", "-c", f'sleep 1.{token}; touch "$1"', "bash", str(ran)],
                         "fencecall-shell-1-test")
    subprocess.run(["setsid", "-f", *argv], check=True)
    assert wait_for(lambda: not live(token))
    time.sleep(1.2)
    assert not ran.exists()


def test_no_zombie_is_left_and_the_reaper_idles(shell: Shell) -> None:
    proc = shell()
    burst = "for i in $(seq 60); do (true &); setsid true & (sleep 0.01 &) & done; wait"
    assert answer(proc, f"{burst}; echo done\n") == "done\n"

    def zombies() -> list[int]:
        return [pid for pid, ppid, state in _table() if ppid == proc.pid and state == "Z"]

    assert wait_for(lambda: not zombies(), timeout=2)
    busy = _cpu_ticks(proc.pid)
    time.sleep(0.5)
    assert _cpu_ticks(proc.pid) - busy <= 1  # waits for signals, never polls


def test_tree_matches_the_process_table(shell: Shell, token: str) -> None:
    proc = shell()
    send(proc, escaping(token))
    assert wait_for(lambda: len(live(token)) == ESCAPING)
    time.sleep(0.2)  # the short-lived bash -c of escaping() are gone
    found = reaper.tree(proc.pid)
    assert sorted(found) == sorted(processes.descendants(proc.pid,
                                                         processes.live_processes()))
    assert set(live(token)) <= set(found)
    assert reaper.tree(2**22 + 1) == []  # above the largest pid: no such process


def test_kill_tree_ends_all_below_but_the_root(shell: Shell, token: str) -> None:
    proc = shell()
    send(proc, escaping(token))
    assert wait_for(lambda: len(live(token)) == ESCAPING)
    started = time.monotonic()
    reaper.kill_tree(proc.pid)
    assert time.monotonic() - started < 2.5
    assert not live(token) and reaper.tree(proc.pid) == []
    assert proc.wait(timeout=2) == 128 + signal.SIGKILL  # bash was below it too


def test_kill_tree_terminates_first_and_follows_orphans(token: str) -> None:
    """Below a plain process (no reaper), the middle one dies on SIGTERM and its child, which
    ignores it, is re-parented out of the tree: it is killed all the same."""
    stubborn = '(trap "" TERM; exec sleep "$STUBBORN") & wait'
    polite = 'sleep "$POLITE" & wait'
    code = ("import subprocess, sys, time\n"
            "subprocess.Popen(['bash', '-c', sys.argv[1]])\n"
            "subprocess.Popen(['bash', '-c', sys.argv[2]])\n"
            "time.sleep(60)\n")
    root = subprocess.Popen([sys.executable, "-c", code, stubborn, polite],
                            start_new_session=True,  # only the sleeps' argv hold the token
                            env={**os.environ, "STUBBORN": f"310.{token}",
                                 "POLITE": f"311.{token}"})
    try:
        assert wait_for(lambda: len(live(token)) == 2)
        middle = [pid for pid in reaper.tree(root.pid) if pid not in live(token)]
        started = time.monotonic()
        reaper.kill_tree(root.pid, grace=0.5)
        assert 0.4 < time.monotonic() - started < 3
        assert not live(token) and not any(map(alive, middle))
        assert root.poll() is None  # the root itself is left alone
    finally:
        root.kill()
        root.wait()


def test_kill_tree_answers_fast_without_children() -> None:
    root = subprocess.Popen(["sleep", "30"])
    try:
        started = time.monotonic()
        reaper.kill_tree(root.pid, grace=5)
        assert time.monotonic() - started < 0.5 and root.poll() is None
    finally:
        root.kill()
        root.wait()


def test_sweep_kills_only_what_a_dead_owner_left(tmp_path: Path, token: str) -> None:
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_owner = f"fencecall-shell-{int(dead.stdout)}-x"

    def detached(owner: str, marker: str) -> None:
        """A process that is not ours (setsid -f: its parent exits) with the owner set."""
        env = {**os.environ, reaper.VARIABLE: owner}
        subprocess.run(["setsid", "-f", "sleep", f"{marker}.{token}"], env=env, check=True)

    detached(dead_owner, "320")
    detached(dead_owner, "321")
    detached(f"fencecall-shell-{os.getpid()}-x", "322")  # its owner lives
    detached("someone-else", "323")
    ours = subprocess.Popen(["sleep", f"324.{token}"],
                            env={**os.environ, reaper.VARIABLE: dead_owner})
    # a reaper of the dead owner still runs (its parent lives): it cleans up itself
    launcher = ("import os, subprocess, sys, time\n"
                "from fencecall.sandbox.reaper import reaped\n"
                "proc = subprocess.Popen(reaped(['sleep', sys.argv[2]], sys.argv[1]))\n"
                "time.sleep(60)\n")
    subprocess.run(["setsid", "-f", sys.executable, "-c", launcher, dead_owner,
                    f"325.{token}"], check=True)
    try:
        # the launcher's argv and the reaper's hold the marker too
        assert wait_for(lambda: len(live(token)) == 8)

        def marked(marker: str) -> list[int]:
            return running(f"{marker}.{token}")

        ours_all = set(live(token))
        doomed = marked("320") + marked("321")
        killed = reaper.sweep()
        assert set(killed) & ours_all == set(doomed) and len(doomed) == 2
        assert wait_for(lambda: not any(map(alive, doomed)))
        for spared in ("322", "323", "324", "325"):
            assert [pid for pid in marked(spared) if alive(pid)], spared
    finally:
        ours.kill()
        ours.wait()


def test_sweep_spares_the_caller_its_ancestors_and_descendants() -> None:
    """A fencecall started from a dead fencecall's shell carries that owner itself, and so
    do its parent and what it starts."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    code = ("import os, subprocess\n"
            "from fencecall.sandbox import reaper\n"
            "child = subprocess.Popen(['sleep', '30'])\n"
            "print(os.getpid(), os.getppid(), child.pid, flush=True)\n"
            "print(*reaper.sweep(), flush=True)\n"
            "child.kill()\n")
    env = {**os.environ, reaper.VARIABLE: f"fencecall-shell-{int(dead.stdout)}-x"}
    done = subprocess.run(["bash", "-c", '"$0" -c "$1"; exit $?', sys.executable, code],
                          env=env, capture_output=True, text=True, timeout=30)
    assert done.returncode == 0, done.stderr
    family, killed = (line.split() for line in done.stdout.splitlines())
    assert len(family) == 3 and not set(family) & set(killed)


def test_startup_is_fast(implementation: str) -> None:
    plain = _best_of(["true"])
    wrapped = _best_of(reaper.reaped(["true"], "fencecall-shell-1-test"))
    assert wrapped - plain < 0.1


def _best_of(argv: list[str]) -> float:
    times = []
    for _ in range(5):
        started = time.perf_counter()
        subprocess.run(argv, check=True)
        times.append(time.perf_counter() - started)
    return min(times)


def _table() -> list[tuple[int, int, str]]:
    """(pid, ppid, state) of every process."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            state, ppid = stat.rpartition(")")[2].split()[:2]
            found.append((int(entry.name), int(ppid), state))
    return found


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    return int(fields[11]) + int(fields[12])


def _fail() -> list[processes.ProcessInfo]:
    raise AssertionError("read the whole process table")
