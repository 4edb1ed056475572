"""Starting, finding and stopping the helper processes the tools keep running."""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import _launch
from ._resource_limits import Cgroup, ResourceLimits, limited
from .host_programs import host_program


def readable(fd: int, timeout: float) -> bool:
    """Whether ``fd`` has something to read (or is at its end) within ``timeout`` seconds.
    ``poll``, not ``select``: a batch holds thousands of descriptors, and ``select`` refuses
    any numbered 1024 or above."""
    poller = select.poll()
    poller.register(fd, select.POLLIN)
    return bool(poller.poll(max(0.0, timeout) * 1000))


_PR_SET_PDEATHSIG = 1
_prctl = (ctypes.CDLL(None, use_errno=True).prctl if sys.platform.startswith("linux")
          else None)

_pool: ThreadPoolExecutor | None = None
"""One thread that starts sandboxed processes; made on first use, idle pool threads never
exit."""
_pool_lock = threading.Lock()


def _steady_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fencecall-spawn")
        return _pool


def _forget_pool() -> None:
    """In a forked child: the pool's thread (and maybe the lock's holder) did not come along."""
    global _pool, _pool_lock
    _pool, _pool_lock = None, threading.Lock()


os.register_at_fork(after_in_child=_forget_pool)


def start_process(argv: Sequence[str], *, limits: ResourceLimits | None = None,
                  reaper: bool = False, **options: Any) -> subprocess.Popen[bytes]:
    """``subprocess.Popen(argv, **options)``, forked from a thread that lives as long as
    fencecall, and killed when fencecall dies; under ``limits`` (see
    :mod:`._resource_limits`) when given. Both bwrap's ``--die-with-parent`` and our own
    parent-death signal are PR_SET_PDEATHSIG, which fires when the *thread* that forked the
    process ends: one started from a short-lived worker thread would die with that thread.
    ``reaper``: ``argv``'s program sets its own parent-death signal and runs nothing unless
    its parent is still this process (a :func:`~.reaper.reaped` argv's reaper), so no
    setpriv is started before it."""
    future = _steady_pool().submit(_popen, argv, limits, options, reaper)
    try:
        proc: subprocess.Popen[bytes] = future.result()
    except BaseException:  # Ctrl-C while waiting: the process may still start; stop it then
        future.add_done_callback(_kill_started)
        raise
    return proc


_SETPRIV = host_program("setpriv")
"""util-linux's setpriv sets the parent-death signal and execs the program, so the process
can be started without a ``preexec_fn``: a hook in the child makes Python fork the whole
interpreter instead of using vfork, which is tens of milliseconds with a large heap (and
spawns are serialised on one thread), against a fraction of one."""


def _popen(argv: Sequence[str], limits: ResourceLimits | None,
           options: dict[str, Any], reaper: bool = False) -> subprocess.Popen[bytes]:
    bwrap = "--die-with-parent" in argv[:40] and any(Path(a).name == "bwrap" for a in argv[:8])
    group = Cgroup.create(limits) if limits is not None else None
    if limits is not None:
        argv = limited(argv, limits, group)
    proc = _spawn(argv, options, bwrap or reaper)
    if group is not None:
        group.started(proc)
    return proc


def _spawn(argv: Sequence[str], options: dict[str, Any],
           sets_its_signal: bool) -> subprocess.Popen[bytes]:
    if options.get("pass_fds") and argv and argv[0] == _launch.launcher():
        return _launched_keeping(argv, options)
    if sets_its_signal:  # bwrap (after the launcher or nsenter), the reaper
        return subprocess.Popen(argv, **options)
    if _SETPRIV is not None:
        return subprocess.Popen([_SETPRIV, "--pdeathsig", "KILL", "--", *argv], **options)
    return subprocess.Popen(argv, preexec_fn=_die_with_parent, **options)


def _launched_keeping(argv: Sequence[str], options: dict[str, Any]) -> subprocess.Popen[bytes]:
    """``argv`` (the launcher's) started with its ``pass_fds`` kept by the launcher, which
    closes every other descriptor: Python's own closing asks close_range for an empty range
    when two kept descriptors are neighbours (the capture files, the network's pair), is
    refused, and closes every descriptor the process has open one by one instead, a
    thousand in a batch. The kept ones are inheritable only while the process starts (the
    launched processes all start on this one thread; any other process started meanwhile
    closes them, as Python's close_fds does by default)."""
    kept = {fd: os.get_inheritable(fd) for fd in sorted(set(options["pass_fds"]))}
    others = {**options, "pass_fds": (), "close_fds": False}
    try:
        for fd in kept:
            os.set_inheritable(fd, True)
        return subprocess.Popen([argv[0], f"--keep={','.join(map(str, kept))}", *argv[1:]],
                                **others)
    finally:
        for fd, was in kept.items():
            os.set_inheritable(fd, was)


def _die_with_parent() -> None:
    """In the child before exec: SIGKILL it when the thread that started it (the steady one,
    which lives as long as fencecall) ends, ``kill -9`` of fencecall included. Unsandboxed,
    this reaches bash or python itself; what they started survives unless the sandbox's pid
    namespace takes it along."""
    if _prctl is not None:
        _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


def _kill_started(future: Future[subprocess.Popen[bytes]]) -> None:
    if future.exception() is None:
        kill_group(future.result())


class SessionAborted(RuntimeError):
    """The session was stopped from outside (a batch task's stop): nothing runs in it again."""


class StartGate:
    """Starts a session's processes until :meth:`abort` is called, from any thread; from then
    on they are killed and no other is started (a session restarts a shell that died, which
    would otherwise bring a stopped task's command back to life). Starting and aborting take
    one lock, so a process started before the abort is killed by it, and a start after it is
    refused."""

    __slots__ = ("_aborted", "_lock", "_procs", "_what")

    def __init__(self, what: str) -> None:
        self._what = what
        self._lock = threading.Lock()
        self._aborted = False
        self._procs: list[subprocess.Popen[bytes]] = []

    def start(self, make: Callable[[], subprocess.Popen[bytes]]) -> subprocess.Popen[bytes]:
        """``make()``'s process, unless the session was aborted (:class:`SessionAborted`)."""
        with self._lock:
            if self._aborted:
                raise SessionAborted(f"the {self._what} was stopped; nothing runs in it again")
            proc = make()
            self._procs = [known for known in self._procs if known.returncode is None]
            self._procs.append(proc)
            return proc

    def abort(self) -> None:
        """SIGKILL the process group of each process started here that is still running, and
        start no other."""
        with self._lock:
            self._aborted = True
            procs = list(self._procs)
        for proc in procs:
            if proc.poll() is None:  # not reaped: its pid is still its own
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(proc.pid, signal.SIGKILL)


def kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGKILL the process group ``proc`` leads (it was started in a session of its own) and
    reap ``proc``."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


@dataclass(frozen=True, slots=True)
class ProcessInfo:
    pid: int
    ppid: int
    sid: int


def live_processes() -> list[ProcessInfo]:
    """Every live process, zombies left out (Linux /proc; elsewhere ``ps``)."""
    try:
        names = os.listdir("/proc")
    except OSError:
        return _ps_processes()
    found = []
    for name in names:
        if not name.isdigit():
            continue
        fields = _stat_fields(name)
        if fields is not None and len(fields) > 3 and fields[0] != b"Z":
            found.append(ProcessInfo(int(name), int(fields[1]), int(fields[3])))
    return found


def _stat_fields(pid: str) -> list[bytes] | None:
    """The fields of ``/proc/PID/stat`` after the command name (state, ppid, pgrp,
    session…), which may itself hold spaces and parentheses; None when the process is gone.
    Plain os calls: a batch's sessions scan this often, under load."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY)
    except OSError:
        return None
    try:
        stat = os.read(fd, 1024)
    except OSError:
        return None
    finally:
        os.close(fd)
    return stat[stat.rfind(b")") + 2 :].split()


def _ps_processes() -> list[ProcessInfo]:
    out = subprocess.run(["ps", "-A", "-o", "pid=,ppid=,sess=,stat="], capture_output=True,
                         text=True)
    found = []
    for line in out.stdout.splitlines():
        pid, ppid, sess, stat = ([*line.split(), "", "", "", ""])[:4]
        if sess.isdigit() and not stat.startswith("Z"):
            found.append(ProcessInfo(int(pid), int(ppid), int(sess)))
    return found


def descendants(root: int, table: Sequence[ProcessInfo]) -> list[int]:
    """The pids below ``root`` in the process tree."""
    children: dict[int, list[int]] = {}
    for info in table:
        children.setdefault(info.ppid, []).append(info.pid)
    found: list[int] = []
    queue = list(children.get(root, []))
    while queue:
        pid = queue.pop()
        found.append(pid)
        queue += children.get(pid, [])
    return found


def _namespace_pid(pid: int) -> int | None:
    """``pid`` as its own pid namespace numbers it (the last NSpid field)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    for line in status.splitlines():
        if line.startswith("NSpid:"):
            return int(line.split()[-1])
    return None


def sandboxed_pid(bwrap: int, table: Sequence[ProcessInfo]) -> int | None:
    """The host pid of the command that bwrap ``bwrap`` runs: bwrap's own init is pid 1 of the
    sandbox's pid namespace and forks the command first, as pid 2. Orphans of the command are
    re-parented to that init, so they are its children too."""
    inits = [info.pid for info in table if info.ppid == bwrap]
    for info in table:
        if info.ppid in inits and _namespace_pid(info.pid) == 2:
            return info.pid
    return None
