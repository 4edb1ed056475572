"""A small process that bash runs under, so that nothing bash starts outlives fencecall.

Without the sandbox's pid namespace, what the model starts in the background (``cmd &``,
``nohup``, ``setsid``, a double fork) leaves bash's session and process tree, and lives on
when fencecall is killed. The reaper is a child subreaper: every orphan below it is
re-parented to it rather than to init, so all of them stay its descendants. When bash exits,
or the reaper gets SIGTERM or SIGHUP (its parent-death signal is SIGTERM), it SIGKILLs all of
them and exits. What a reaper killed together with fencecall (``kill -9`` of both, the OOM
killer) leaves behind carries ``FENCECALL_REAPER`` in its environment, and :func:`sweep`
finds it on the next start. Linux only (``prctl``); elsewhere :func:`reaped` runs the
program as it is.

Every shell starts one, so it must start cheaply: where fencecall was built with a C compiler
the reaper is ``fencecall-reaper`` beside this module (``_reaper.c``, built by ``setup.py``),
which starts in well under a millisecond; elsewhere the same steps run as a bare ``python -I
-S`` script (:data:`_SCRIPT`), whose interpreter start costs 10-20 ms of CPU per shell.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from . import _processes
from .scratch import PREFIX, process_alive

VARIABLE = "FENCECALL_REAPER"
"""Set to the owner for the reaper's child; every descendant that keeps its environment
inherits it."""

_OWNER = re.compile(rf"{PREFIX}[a-z]+-(?P<pid>\d+)-")
_ENVIRON_LIMIT = 256 * 1024
"""Bytes of a process's environment :func:`sweep` reads: the variable may come last."""
_KILL_FOR = 2.0
_POLL = 0.02
_FIRST_PAUSE = 0.001
"""The first wait after a SIGKILL: each session's close waits on it, and a whole pause of
``_POLL`` there was most of a batch task's time in its end."""

PROGRAM: Path | None = Path(__file__).with_name("fencecall-reaper")
"""The compiled reaper (``_reaper.c``), the same steps as :data:`_SCRIPT` with the same
arguments; None (or a path that is not there) runs the script instead."""

_SCRIPT = r"""
import ctypes, os, sys, time
import _signal as sig  # not signal: its enum import would double the start-up time
setting, parent, argv = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
WAKE = {sig.SIGCHLD, sig.SIGTERM, sig.SIGHUP}
mask = sig.pthread_sigmask(sig.SIG_BLOCK, WAKE | {sig.SIGINT})  # taken by sigwaitinfo
prctl = ctypes.CDLL(None).prctl
prctl.argtypes = [ctypes.c_int] + [ctypes.c_ulong] * 4
prctl(1, sig.SIGTERM, 0, 0, 0)  # PR_SET_PDEATHSIG: a signal we catch, not setpriv's KILL
prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER: orphans below come to us, not to init
if os.getppid() != parent:  # fencecall died before the signal was set
    sys.exit(128 + sig.SIGTERM)
main = os.fork()
if main == 0:
    try:
        sig.signal(sig.SIGPIPE, sig.SIG_DFL)  # Python ignores these; a shell must not
        sig.signal(sig.SIGXFSZ, sig.SIG_DFL)
        sig.pthread_sigmask(sig.SIG_SETMASK, mask)
        name, _, value = setting.partition("=")
        os.execvpe(argv[0], argv, {**os.environ, name: value})
    except OSError as error:
        os.write(2, f"reaper: cannot run {argv[0]}: {error.strerror}\n".encode())
    finally:
        os._exit(127)
# the child's pipes: a copy kept here would hide its end-of-file from fencecall
null = os.open(os.devnull, os.O_RDWR)
for fd in (0, 1, 2):
    os.dup2(null, fd)
if null > 2:
    os.close(null)
status = None

def reap():
    # Reap every child that ended (noting bash's status); False once none is left.
    global status
    while True:
        try:
            pid, code = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return False
        if pid == 0:
            return True
        if pid == main and status is None:  # not when we killed it
            code = os.waitstatus_to_exitcode(code)
            status = code if code >= 0 else 128 - code

def below():
    # Every pid below us: from /proc/PID/task/*/children, else from every process's ppid.
    found, todo = [], [os.getpid()]
    if os.path.exists("/proc/thread-self/children"):
        while todo:
            pid = todo.pop()
            try:
                tasks = os.listdir(f"/proc/{pid}/task")
            except OSError:
                continue
            for task in tasks:
                try:
                    with open(f"/proc/{pid}/task/{task}/children", "rb") as file:
                        children = [int(child) for child in file.read().split()]
                except OSError:
                    continue
                found += children
                todo += children
        return found
    children = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                with open(f"/proc/{name}/stat", "rb") as file:
                    stat = file.read()
            except OSError:
                continue
            ppid = int(stat[stat.rfind(b")") + 2 :].split()[1])
            children.setdefault(ppid, []).append(int(name))
    while todo:
        more = children.get(todo.pop(), [])
        found += more
        todo += more
    return found

while status is None:
    signo = sig.sigwaitinfo(WAKE).si_signo
    if signo == sig.SIGCHLD:
        reap()
    else:
        status = 128 + signo
# no child left means nothing left below: a subreaper's descendants all descend from one
deadline = time.monotonic() + 5
while reap() and time.monotonic() < deadline:
    for pid in below():
        try:
            os.kill(pid, 9)
        except OSError:
            pass
    sig.sigtimedwait({sig.SIGCHLD}, 0.05)
sys.exit(status)
"""


def reaped(argv: Sequence[str], owner: str) -> list[str]:
    """The argv that runs ``argv`` under a reaper, to be started by this process (the reaper
    checks that its parent is still the one that built the argv). ``owner`` names the owning
    fencecall process (``fencecall-KIND-PID-…``, a scratch folder's name) for :func:`sweep`.
    The reaper is :data:`PROGRAM` where it was built, else a bare ``python -I -S`` that
    imports nothing of fencecall's."""
    if not sys.platform.startswith("linux"):
        return list(argv)
    arguments = [f"{VARIABLE}={owner}", str(os.getpid()), *argv]
    if _compiled() is not None:
        return [str(PROGRAM), *arguments]
    return [sys.executable, "-I", "-S", "-c", _SCRIPT, *arguments]


def _compiled() -> Path | None:
    """:data:`PROGRAM` when it can run here."""
    return PROGRAM if PROGRAM is not None and os.access(PROGRAM, os.X_OK) else None


def tree(pid: int) -> list[int]:
    """The live pids below ``pid`` (zombies left out). Read from ``/proc/PID/task/*/children``,
    which touches only that tree: a batch runs many sessions at once, and they would all read
    every process's stat otherwise. Without those files (a kernel built without
    CONFIG_PROC_CHILDREN, or no /proc) from the whole process table."""
    return list(_tree(pid))


def _tree(pid: int) -> dict[int, bytes]:
    """:func:`tree`'s pids, with their start times."""
    if not _children_listed():
        below = _processes.descendants(pid, _processes.live_processes())
        return {child: started for child in below if (started := _start_time(child))}
    found: dict[int, bytes] = {}
    root = _state(pid)
    todo = [(pid, root[1])] if root is not None else []
    while todo:
        parent, threads = todo.pop()
        for child in _children(parent, threads):
            state = _state(child)
            if state is not None:  # a zombie has no children either
                found[child] = state[0]
                todo.append((child, state[1]))
    return found


def lone_child(parent: int, child: int) -> bool | None:
    """Whether ``child`` is the only process below ``parent``, and has none below it, from
    the two processes' lists of children alone; None where those cannot tell (no such lists
    here, either process has other threads, or is gone). ``child``'s list is read first: a
    process that leaves it meanwhile (its parent exited) is on ``parent``'s by then, if
    ``parent`` is where orphans go (bwrap's init, a reaper)."""
    if not _children_listed():
        return None
    for pid, expected in ((child, []), (parent, [child])):
        state = _state(pid)
        if state is None or state[1] != 1:
            return None
        if _children(pid, 1) != expected:
            return False
    return True


def kill_tree(pid: int, grace: float = 0.0) -> None:
    """End every process below ``pid``, not ``pid`` itself: SIGTERM first when ``grace`` is
    positive, and SIGKILL what is left after ``grace`` seconds, again and again while new
    ones appear, for at most about 2 seconds. A process orphaned meanwhile is re-parented out
    of the tree (unless ``pid`` is a reaper) and is still killed: each one seen is kept,
    known by its start time so that a reused pid is not."""
    seen: dict[int, bytes] = {}

    def remaining() -> list[int]:
        found = _tree(pid)
        seen.update(found)
        return [child for child, started in seen.items()
                if child in found or _start_time(child) == started]

    if grace > 0:
        victims = remaining()
        _signal_all(victims, signal.SIGTERM)
        deadline = time.monotonic() + grace
        while victims and time.monotonic() < deadline:
            time.sleep(_POLL)
            victims = remaining()
    deadline, pause = time.monotonic() + _KILL_FOR, _FIRST_PAUSE
    while (victims := remaining()) and time.monotonic() < deadline:
        _signal_all(victims, signal.SIGKILL)
        time.sleep(pause)  # killed processes are gone within a millisecond or two
        pause = min(pause * 2, _POLL)


def sweep() -> list[int]:
    """SIGKILL what the shells of a dead fencecall left running (it was killed together with
    its reapers, by ``kill -9`` of the group or the OOM killer); returns their pids. Those are
    this user's processes whose ``FENCECALL_REAPER`` names a process that no longer runs, and
    that no reaper of that owner is above: one still running cleans up itself, and its owner
    may live in another pid namespace, where its pid means another process. This process,
    its ancestors and its descendants are spared. Reads each process's environment, once
    per fencecall start."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return []
    uid = os.getuid()
    mine = set(_ancestry(os.getpid()))
    dead: dict[str, bool] = {}
    killed = []
    for name in names:
        if not name.isdigit() or int(name) in mine:
            continue
        setting = _reaper_setting(int(name), uid)
        owner = None if setting is None else _OWNER.match(setting, len(VARIABLE) + 1)
        if setting is None or owner is None:
            continue
        if setting not in dead:
            dead[setting] = not process_alive(int(owner.group("pid")))
        if not dead[setting]:
            continue
        ancestry = _ancestry(int(name))
        if os.getpid() in ancestry or any(_is_reaper(above, setting) for above in ancestry[1:]):
            continue
        with contextlib.suppress(OSError):  # gone, or a set-user-ID program
            os.kill(int(name), signal.SIGKILL)
            killed.append(int(name))
    return killed


@functools.cache
def sweep_once() -> None:
    """:func:`sweep`, once per process (at the first session)."""
    sweep()


@functools.cache
def _children_listed() -> bool:
    return os.path.exists("/proc/thread-self/children")


def _children(pid: int, threads: int) -> list[int]:
    """The children of every thread of ``pid``, which has ``threads`` threads: each lists
    those it forked itself. A process of one thread (bwrap, bash, most commands) is read
    without listing its threads."""
    try:
        tasks = [str(pid)] if threads == 1 else os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []
    found: list[int] = []
    for task in tasks:
        with contextlib.suppress(OSError, ValueError):
            found += map(int, _read(f"/proc/{pid}/task/{task}/children", 1 << 20).split())
    return found


def _read(path: str, limit: int) -> bytes:
    """At most ``limit`` bytes of ``path``: plain os calls, as for /proc in _processes.py."""
    fd = os.open(path, os.O_RDONLY)
    try:
        return _read_fd(fd, limit)
    finally:
        os.close(fd)


def _read_fd(fd: int, limit: int) -> bytes:
    """Read in pages, growing: a read allocates the bytes it asks for, and a list of
    children is nearly always a few bytes long, though it may be long."""
    data = b""
    while len(data) < limit and (chunk := os.read(fd, min(limit - len(data),
                                                          max(4096, len(data))))):
        data += chunk
    return data


def _stat(pid: int) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, …); None when
    the process is gone."""
    try:
        stat = _read(f"/proc/{pid}/stat", 4096)
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :].split()


def _start_time(pid: int) -> bytes | None:
    """When ``pid`` started (stat's field 22), which tells it from a later process given the
    same pid; None when it is gone or a zombie."""
    state = _state(pid)
    return state[0] if state is not None else None


def _state(pid: int) -> tuple[bytes, int] | None:
    """``pid``'s start time (see :func:`_start_time`) and number of threads (field 20);
    None when it is gone or a zombie."""
    fields = _stat(pid)
    if fields is None or len(fields) < 20 or fields[0] == b"Z" or not fields[17].isdigit():
        return None
    return fields[19], int(fields[17])


def freeze_and_kill(root: int, spare: frozenset[int] = frozenset(),
                    within: float = _KILL_FOR) -> set[int]:
    """SIGKILL every process below ``root`` but ``spare``; returns them. Each is stopped
    first (SIGSTOP, which no handler catches) and the tree read again until no new one
    appears, so that none runs a handler or reacts to another's death (a shell running the
    rest of its line once its ``sleep`` is killed, a SIGTERM handler) meanwhile."""
    frozen: set[int] = set()
    deadline = time.monotonic() + within
    while (more := set(tree(root)) - spare - frozen) and time.monotonic() < deadline:
        _signal_all(list(more), signal.SIGSTOP)
        frozen |= more
    _signal_all(list(frozen), signal.SIGKILL)
    return frozen


def _signal_all(pids: Sequence[int], signum: signal.Signals) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signum)


def _ancestry(pid: int) -> list[int]:
    """``pid``, its parent, and so on up to init."""
    chain = [pid]
    while chain[-1] > 1 and (fields := _stat(chain[-1])) is not None and len(fields) > 1:
        ppid = int(fields[1])
        if ppid <= 0 or ppid in chain:
            break
        chain.append(ppid)
    return chain


def _reaper_setting(pid: int, uid: int) -> str | None:
    """``FENCECALL_REAPER=…`` from the environment of ``pid`` when it is this user's."""
    try:
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY)
    except OSError:
        return None
    try:
        if os.fstat(fd).st_uid != uid:
            return None
        environ = _read_fd(fd, _ENVIRON_LIMIT)
    except OSError:
        return None
    finally:
        os.close(fd)
    key = f"{VARIABLE}=".encode()
    for entry in environ.split(b"\0"):
        if entry.startswith(key):
            return entry.decode(errors="replace")
    return None


def _is_reaper(pid: int, setting: str) -> bool:
    """Whether ``pid`` is a reaper that :func:`reaped` gave ``setting``: the compiled one
    (its setting first) or the script (after ``-I -S -c SCRIPT``)."""
    try:
        args = _read(f"/proc/{pid}/cmdline", len(_SCRIPT) * 2 + 4096).split(b"\0")
    except OSError:
        return False
    wanted = setting.encode()
    if len(args) > 1 and Path(os.fsdecode(args[0])).name == "fencecall-reaper":
        return args[1] == wanted
    return len(args) > 5 and args[3] == b"-c" and args[5] == wanted

