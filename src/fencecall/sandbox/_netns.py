"""One private network namespace (loopback only) for all the sandboxes of a conversation.

Each bwrap with ``--unshare-all`` gets a loopback of its own, so a server the model starts in
the shell cannot be reached from the python tool, a read-only run or a later shell. Instead,
the conversation has one user and one network namespace with ``lo`` up, which fencecall keeps
alive by holding open descriptors of both, and starts every sandbox of the conversation
behind a program that enters them, then runs ``bwrap ... --share-net``: bwrap still makes its
own user, pid, ipc… namespaces inside, but keeps this network. Nothing outside can reach it,
and the host's loopback is not in it.

Where fencecall's launcher was built (see :mod:`._launch`), the first sandbox makes them: its
launcher (``fencecall-launch --new-netns=SOCKET --``) unshares them before it execs bwrap and
sends descriptors of both over a Unix socket, which fencecall reads only once another sandbox
is to join (``fencecall-launch --userns=FD --netns=FD --``): most conversations start one
sandbox, the shell, and no process is started for the namespaces alone. Should that first
sandbox fail to make them, the next one makes them instead.

Elsewhere a short-lived holder makes them at once, ``bwrap --unshare-user --unshare-net ...
cat`` under setpriv, and sandboxes enter them with ``nsenter --user=FD --net=FD
--preserve-credentials --``. The holder gets a parent-death signal before it makes anything
(bwrap sets its own only once it has made the namespaces, so setpriv sets one first), and its
argv names the fencecall that started it, so that a holder a killed fencecall left is found
and ended by the next one (:func:`sweep_holders`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Callable
from pathlib import Path
from types import TracebackType

from . import _launch
from ._processes import kill_group, live_processes, readable, start_process
from .host_programs import host_program

_HOLDER = ("--unshare-user", "--unshare-net", "--die-with-parent", "--ro-bind", "/", "/")
_MARK = "FENCECALL_NETNS_HOLDER"
"""Followed in the holder's argv by the pid of the fencecall that starts it (set with bwrap's
``--setenv``)."""
_TIMEOUT = 10.0
_LOOPBACK_ROUTE = re.compile(r"\|-- 127\.0\.0\.1\n\s+/32 host LOCAL")
"""127.0.0.1's entry in the Local routing table, which exists only while ``lo`` is up with
that address (``/proc/PID/net/fib_trie``)."""


class SharedNetwork:
    """Open descriptors of a user namespace and the network namespace it owns; the namespaces
    live as long as the descriptors. Launched, the descriptors come from the first sandbox
    started with :attr:`prefix`, which makes the namespaces. :meth:`close` is safe from any
    thread, but a sandbox whose command was built before it and is started after it would
    enter whatever the descriptor numbers then refer to: close only once nothing starts any
    more. The sandboxes of a conversation are started one at a time."""

    __slots__ = ("_closed", "_enter", "_fds", "_launched", "_lock", "_offer")

    def __init__(self, enter: str, fds: tuple[int, int] | None = None, *,
                 launched: bool = False) -> None:
        """``enter``: nsenter with the descriptors ``fds`` of a holder's namespaces, or the
        launcher when ``launched`` (the first sandbox then makes them)."""
        self._enter = enter
        self._launched = launched
        self._fds = fds
        self._offer: tuple[socket.socket, int] | None = None
        """Where the sandbox that makes the namespaces sends them: fencecall's end of a
        socket pair, and the descriptor of the other end that sandbox inherits."""
        self._closed = False
        self._lock = threading.Lock()

    @classmethod
    def create(cls) -> SharedNetwork:
        """A new namespace pair (made by its first sandbox where the launcher was built);
        OSError, with the reason, where it cannot be made here."""
        launcher = _launch.launcher()
        if launcher is not None:
            return cls(launcher, launched=True)
        nsenter, bwrap, cat = (host_program(name) for name in ("nsenter", "bwrap", "cat"))
        if nsenter is None:
            raise OSError("nsenter (util-linux) is not installed")
        if bwrap is None or cat is None:
            raise OSError("bwrap or cat is not installed")
        sweep_holders_once()
        return cls(nsenter, _hold_namespaces(bwrap, cat))

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors a process started with the last :attr:`prefix` must inherit
        (Popen's ``pass_fds``)."""
        with self._lock:
            self._check_open()
            if self._fds is not None:
                return self._fds
            return (self._offer[1],) if self._offer is not None else ()

    @property
    def prefix(self) -> tuple[str, ...]:
        """The argv that enters the namespaces, then runs the rest of the command line with
        fencecall's uid and gid (inside, they map to themselves); launched, before they are
        made, the argv that makes them. The launcher closes the descriptors before it runs
        the rest; nsenter leaves them open. Start the command before asking again."""
        with self._lock:
            self._check_open()
            if self._fds is None and self._launched:
                self._fds = self._take_made()
            if self._fds is None:
                if self._offer is None:
                    mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
                    self._offer = (mine, theirs.detach())
                return (self._enter, f"--new-netns={self._offer[1]}", "--")
            user, net = self._fds
        if self._launched:
            return (self._enter, f"--userns={user}", f"--netns={net}", "--")
        return (self._enter, f"--user=/proc/self/fd/{user}", f"--net=/proc/self/fd/{net}",
                "--preserve-credentials", "--")

    def _take_made(self) -> tuple[int, int] | None:
        """The namespaces the sandbox started with the last offer made and sent; None when
        there was none, or it made none (it never started, or failed first)."""
        if self._offer is None:
            return None
        mine, theirs = self._offer
        self._offer = None
        os.close(theirs)  # now only that sandbox's launcher holds it, if it runs
        with mine:
            if not readable(mine.fileno(), _TIMEOUT):
                return None  # started but stuck before it made them: the next one will
            _, fds, _, _ = socket.recv_fds(mine, 1, 2, socket.MSG_CMSG_CLOEXEC)
        if len(fds) != 2:
            for fd in fds:
                os.close(fd)
            return None
        try:
            for fd, name in zip(fds, ("user", "net"), strict=True):
                if _same_file(os.fstat(fd), os.stat(f"/proc/self/ns/{name}")):
                    raise OSError(f"the sandbox did not make a new {name} namespace")
        except BaseException:
            for fd in fds:
                os.close(fd)
            raise
        return fds[0], fds[1]

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError("the conversation's network namespace was closed")

    def close(self) -> None:
        """Let the namespaces go once no sandbox is left in them; idempotent."""
        with self._lock:
            self._closed = True
            fds, self._fds = self._fds, None
            offer, self._offer = self._offer, None
        for fd in fds or ():
            os.close(fd)
        if offer is not None:
            offer[0].close()
            os.close(offer[1])

    def __enter__(self) -> SharedNetwork:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()


def _hold_namespaces(bwrap: str, cat: str) -> tuple[int, int]:
    """Descriptors (close-on-exec) of the user and network namespaces of a holder that ``cat``
    keeps running until its stdin closes: while it runs, its pid cannot be reused."""
    info_read, info_write = os.pipe()
    setpriv = host_program("setpriv")  # start_process leaves it to bwrap, which is too late
    argv = _holder_argv(bwrap, cat, info_write)
    try:
        holder = start_process([setpriv, "--pdeathsig", "KILL", "--", *argv] if setpriv else argv,
                               stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, pass_fds=(info_write,),
                               start_new_session=True)
    except BaseException:
        os.close(info_read)
        raise
    finally:
        os.close(info_write)
    with os.fdopen(info_read, "rb") as info_file:
        def state() -> tuple[int, int | None]:
            info = json.loads(info_file.read())  # cat runs, so bwrap has written it
            return int(info["child-pid"]), info.get("net-namespace")  # (bwrap 0.5 and later)
        return _take_namespaces(holder, state)


def _take_namespaces(holder: subprocess.Popen[bytes],
                     state: Callable[[], tuple[int, int | None]]) -> tuple[int, int]:
    """Once ``holder`` echoes a line: descriptors of the namespaces of the process ``state``
    names (with the network namespace's inode the holder reported, if it did), checked to be
    new and to have ``lo`` up; then the holder is told to end."""
    fds: list[int] = []
    try:
        _await_echo(holder)
        pid, reported = state()
        for name in ("user", "net"):
            fds.append(os.open(f"/proc/{pid}/ns/{name}", os.O_RDONLY | os.O_CLOEXEC))
            if _same_file(os.fstat(fds[-1]), os.stat(f"/proc/self/ns/{name}")):
                raise OSError(f"the holder did not make a new {name} namespace")
        if reported is not None and reported != os.fstat(fds[1]).st_ino:
            raise OSError("the holder's network namespace is not the one bwrap reported")
        if not _LOOPBACK_ROUTE.search(
                Path(f"/proc/{pid}/net/fib_trie").read_text().partition("Local:")[2]):
            raise OSError("the loopback interface is not up in the new network namespace")
        _close_pipes(holder)  # the holder ends; the descriptors keep the namespaces
        holder.wait(_TIMEOUT)
        return fds[0], fds[1]
    except (ValueError, KeyError, TypeError, subprocess.TimeoutExpired) as err:
        _discard(holder, fds)
        raise OSError(f"could not read the namespace holder's state ({err})") from err
    except BaseException:
        _discard(holder, fds)
        raise


def _discard(holder: subprocess.Popen[bytes], fds: list[int]) -> None:
    """Close ``fds`` and stop the holder unless it was reaped (then its pid may be another's)."""
    for fd in fds:
        os.close(fd)
    if holder.returncode is None:
        kill_group(holder)
    _close_pipes(holder)


def _close_pipes(holder: subprocess.Popen[bytes]) -> None:
    for pipe in (holder.stdin, holder.stdout, holder.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def _await_echo(holder: subprocess.Popen[bytes]) -> None:
    """Send the holder a line and wait for it to come back; OSError with the holder's
    message if it ends instead, or the timeout passes."""
    assert holder.stdin is not None and holder.stdout is not None and holder.stderr is not None
    with contextlib.suppress(BrokenPipeError):
        holder.stdin.write(b"\n")
        holder.stdin.flush()
    deadline = time.monotonic() + _TIMEOUT
    while (remaining := deadline - time.monotonic()) > 0:
        if readable(holder.stdout.fileno(), remaining):
            if os.read(holder.stdout.fileno(), 1):
                return
            break
    else:
        raise OSError(f"the namespace holder did not start within {_TIMEOUT:.0f}s")
    kill_group(holder)
    message = holder.stderr.read().decode(errors="replace").strip()
    raise OSError(f"the holder could not make the network namespace "
                  f"({message or f'exit status {holder.returncode}'})")


def _same_file(first: os.stat_result, second: os.stat_result) -> bool:
    return (first.st_dev, first.st_ino) == (second.st_dev, second.st_ino)


def _holder_argv(bwrap: str, cat: str, info_fd: int) -> list[str]:
    """The holder's command line, marked as this process's."""
    return [bwrap, *_HOLDER, "--setenv", _MARK, str(os.getpid()), "--info-fd", str(info_fd),
            "--", cat]


def sweep_holders() -> list[int]:
    """SIGKILL the namespace holders that a fencecall killed while it started them left
    behind, before either end could act on a parent-death signal; returns their pids. A
    holder is a process of this user, in this pid namespace (where the pid it names is the
    one meant), whose argv carries the mark; it is left behind when the fencecall that mark
    names is not above it in the process tree (a live one is its parent)."""
    try:
        here = os.readlink("/proc/self/ns/pid")
    except OSError:
        return []
    parents = {info.pid: info.ppid for info in live_processes()}
    killed = []
    for pid in parents:
        owner = _holder_owner(pid, here)
        if owner is None or owner in _ancestors(pid, parents):
            continue
        with contextlib.suppress(OSError):  # gone meanwhile
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)
    return killed


@functools.cache
def sweep_holders_once() -> None:
    """:func:`sweep_holders`, once per process (before its first holder)."""
    sweep_holders()


def _holder_owner(pid: int, namespace: str) -> int | None:
    """The pid the mark of holder ``pid`` names, if it is a holder of this user in the pid
    namespace ``namespace``."""
    try:
        if os.stat(f"/proc/{pid}").st_uid != os.getuid() or \
                os.readlink(f"/proc/{pid}/ns/pid") != namespace:
            return None
        with open(f"/proc/{pid}/cmdline", "rb") as file:
            args = file.read(64 * 1024).split(b"\0")
    except OSError:
        return None
    for at in range(len(args) - 2):
        if args[at] == b"--setenv" and args[at + 1] == _MARK.encode() \
                and args[at + 2].isdigit():
            return int(args[at + 2])
    return None


def _ancestors(pid: int, parents: dict[int, int]) -> list[int]:
    """The pids above ``pid`` in the process tree, up to init."""
    found: list[int] = []
    while (pid := parents.get(pid, 0)) > 0 and pid not in found:
        found.append(pid)
    return found
