"""A persistent bash process that runs one command at a time.

Each command is written to a file and sourced by the same bash, so ``cd`` and ``export``
persist between calls. Its stdout and stderr go to their own files and its stdin is
``/dev/null`` (a command waiting for input gets end-of-file instead of hanging the session).
bash runs in a session of its own; on timeout every process of that session but bash itself
is killed (TERM, then KILL), which takes down whole pipelines and their children. If bash
itself is stuck (a builtin loop) or dies (``exit``), it is restarted and the result says so.

With an enforced :class:`Sandbox`, bash runs inside bwrap. Its scratch folder is the only
place it shares with fencecall, so fencecall treats what is there as hostile: every file name
is new and random, and files are read without following symlinks. Its /tmp is a folder of
the session's (under ``WORKSPACE_WRITE``) rather than an empty tmpfs. A timeout kills every
process of the sandbox but bash, including those that left bash's session or process tree. A
``read_only`` run happens in a fresh read-only sandbox that sees the persistent shell's
working directory, exported variables and /tmp but cannot change them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import shlex
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

from .output import cut_note
from .paths import host_program
from .processes import (
    StartGate,
    descendants,
    kill_group,
    live_processes,
    sandboxed_pid,
    session_members,
    start_process,
)
from .sandbox import Sandbox, SandboxPolicy
from .scratch import make_scratch

_KILL_GRACE = 0.5
DISK_LIMIT = 64 * 1024 * 1024
"""Output a command may leave in its scratch files before it is stopped (a `yes` must not
fill the disk in the minute before its timeout)."""
_WATCH_EVERY = 0.25
_STATE_TIMEOUT = 5.0
_BASH = host_program("bash") or "/bin/bash"
_ONE_SHOT = ('source "$1" >/dev/null 2>&1; export TMPDIR="$5"; '
             'source "$2" >"$3" 2>"$4" </dev/null')
"""The read-only run: restore the state, then the command as the persistent shell runs it.
Its /tmp is the shell's, read-only, so temporary files go to a folder of its own."""


@dataclass(frozen=True, slots=True)
class ShellResult:
    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool = False
    restarted: str | None = None
    """Why the shell had to be restarted (cwd and variables were reset), if it was."""
    overflowed: bool = False
    """The command wrote more than the disk limit of output and was stopped."""


def _create(path: Path, text: str) -> None:
    """Write a new file; fails rather than follow anything the sandbox put at ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _discard(*paths: Path) -> None:
    """Remove files or folders, whatever the sandbox turned them into, following no link."""
    for path in paths:
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


def _read_regular(path: Path, limit: int) -> str:
    """The file's text, its head and tail kept when it exceeds ``limit`` bytes; empty when it
    is missing or not a regular file (a symlink or FIFO put there from inside the sandbox
    would make fencecall read its own secrets, or block)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return ""
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return ""
        half = limit // 2
        if info.st_size <= 2 * half:
            return handle.read(2 * half).decode("utf-8", errors="replace")
        head = handle.read(half).decode("utf-8", errors="replace")
        handle.seek(info.st_size - half)
        tail = handle.read(half).decode("utf-8", errors="replace")
    cut = info.st_size - 2 * half
    return f"{head}\n{cut_note(cut, 'bytes')}\n{tail}"


class ShellSession:
    """One bash process; :meth:`run` executes a command in it."""

    def __init__(self, cwd: Path, *, env: dict[str, str] | None = None,
                 output_limit: int = 1_000_000, disk_limit: int = DISK_LIMIT,
                 sandbox: Sandbox | None = None):
        self._cwd = cwd
        self._env = env
        self._output_limit = output_limit
        self._disk_limit = disk_limit
        self._overflowed = False
        self._sandbox = sandbox or Sandbox(SandboxPolicy.OFF)
        self._dir = make_scratch("shell")
        self._own_tmp: Path | None = None
        if self._sandbox.policy is SandboxPolicy.WORKSPACE_WRITE and self._sandbox.tmp is None:
            # a folder rather than a tmpfs, so that read-only runs see the files in /tmp too
            self._own_tmp = make_scratch("tmp")
            self._sandbox = replace(self._sandbox, tmp=self._own_tmp)
        self._proc: subprocess.Popen[bytes] | None = None
        self._gate = StartGate("shell")
        self._buffer = b""
        self._bash_pid: int | None = None
        self._start()

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ if self._env is None else self._env)
        env.setdefault("PAGER", "cat")
        env.setdefault("GIT_PAGER", "cat")
        env["TERM"] = "dumb"
        return env

    def _start(self) -> None:
        argv = self._sandbox.command([_BASH, "--noprofile", "--norc"], scratch=[self._dir],
                                     cwd=self._cwd)
        self._proc = self._gate.start(lambda: start_process(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=self._cwd, env=self._environment(),
            start_new_session=True))
        self._buffer = b""
        self._bash_pid = None

    def abort(self) -> None:
        """Kill the shell and what runs in its session now (a read-only run too), from any
        thread, and never start it again: the command running ends, and later ones fail (a
        batch task's stop)."""
        self._gate.abort()

    @property
    def pid(self) -> int:
        """The process fencecall started: bash, or bwrap when sandboxed. Its session holds
        every process of the shell that did not leave it."""
        assert self._proc is not None
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def run(self, command: str, timeout: float = 60.0, *,
            read_only: bool = False) -> ShellResult:
        """Run ``command``; wait at most ``timeout`` seconds. With ``read_only`` it runs in a
        one-shot read-only sandbox (which needs an enforced sandbox: ValueError otherwise)."""
        if read_only:
            if not self._sandbox.enforced:
                raise ValueError("read_only needs an enforced sandbox")
            return self._run_read_only(command, timeout)
        token = secrets.token_hex(8)
        script, out, err = (self._dir / f"{token}{suffix}" for suffix in (".sh", ".out", ".err"))
        _create(script, command + "\n")
        try:
            status, timed_out, restarted = self._source(script, out, err, timeout)
            overflowed, self._overflowed = self._overflowed, False
            return ShellResult(self._read(out), self._read(err), None if timed_out else status,
                               timed_out and not overflowed, restarted, overflowed)
        finally:
            _discard(script, out, err)

    def _source(self, script: Path, out: Path, err: Path,
                timeout: float) -> tuple[int | None, bool, str | None]:
        """(exit status, timed out?, why bash was restarted) of sourcing ``script``."""
        restarted = None
        if not self.alive():
            restarted = "the previous shell had exited"
            self._restart()
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        marker = secrets.token_hex(8)
        line = (f"source {shlex.quote(str(script))} >{shlex.quote(str(out))} "
                f"2>{shlex.quote(str(err))} </dev/null; printf '\\n{marker} %s\\n' \"$?\"\n")
        try:
            proc.stdin.write(line.encode())
            proc.stdin.flush()
        except BrokenPipeError:  # it died since: start another (its pipes closed first)
            self._restart()
            return self._source(script, out, err, timeout)
        try:
            status, timed_out = self._wait_marker(marker, timeout, watch=(out, err))
        except KeyboardInterrupt:  # Ctrl-C: stop the command too, keep the shell
            self._kill_children()
            self._wait_marker(marker, _KILL_GRACE * 2)
            raise
        if status is None and timed_out:
            self._kill_children()
            status, _ = self._wait_marker(marker, _KILL_GRACE * 2)
        if status is None:
            reason = ("the command did not stop on timeout" if timed_out
                      else "the command exited the shell")
            try:
                exit_code = proc.wait(timeout=_KILL_GRACE) if not timed_out else None
            except subprocess.TimeoutExpired:
                exit_code = None
            self._restart()
            restarted = f"{reason}; cwd and variables were reset"
            status = exit_code
        return status, timed_out, restarted

    def _run_read_only(self, command: str, timeout: float) -> ShellResult:
        """Run ``command`` in a fresh read-only sandbox, in the persistent shell's working
        directory and with its exported variables; the persistent shell is left as it was.
        The run shares the scratch folder, where every name is new and random, so nothing it
        leaves there is ever used again."""
        token = secrets.token_hex(8)
        state = self._exported_state(self._dir / f"{token}.state")
        script, out, err, tmp = (self._dir / f"{token}{suffix}"
                                 for suffix in (".sh", ".out", ".err", ".tmp"))
        try:
            _create(script, command + "\n")
            tmp.mkdir()
            argv = self._sandbox.read_only().command(
                [_BASH, "--noprofile", "--norc", "-c", _ONE_SHOT, "bash",
                 *map(str, (state or "/dev/null", script, out, err, tmp))],
                scratch=[self._dir], cwd=self._cwd)
            proc = self._gate.start(lambda: start_process(
                argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE, cwd=self._cwd, start_new_session=True,
                env={} if state else self._environment()))
            try:
                _, setup_errors = proc.communicate(timeout=timeout)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                return ShellResult(self._read(out), self._read(err), None, True)
            except KeyboardInterrupt:
                kill_group(proc)
                raise
            stderr = setup_errors.decode("utf-8", errors="replace") + self._read(err)
            return ShellResult(self._read(out), stderr, proc.returncode)
        finally:
            _discard(script, out, err, tmp, self._dir / f"{token}.state")

    def _exported_state(self, path: Path) -> Path | None:
        """``path``, once the persistent shell wrote there a script that recreates its working
        directory and exported variables; None when it is not running or does not answer."""
        if not self.alive():
            return None
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        marker = secrets.token_hex(8)
        line = (f"{{ builtin printf 'builtin cd -- %q\\n' \"$PWD\"; builtin export -p; }} "
                f">{shlex.quote(str(path))} 2>/dev/null; "
                f"builtin printf '\\n{marker} %s\\n' 0\n")
        try:
            proc.stdin.write(line.encode())
            proc.stdin.flush()
        except BrokenPipeError:
            return None
        status, _ = self._wait_marker(marker, _STATE_TIMEOUT)
        return path if status is not None else None

    def _wait_marker(self, marker: str, timeout: float,
                     watch: tuple[Path, ...] = ()) -> tuple[int | None, bool]:
        """(exit status, timed out?) once bash prints the marker; status None if it died.
        Output files in ``watch`` that grow past the disk limit end the wait like a timeout
        (and set ``_overflowed``): the disk is capped, not only what is read back."""
        proc = self._proc
        assert proc is not None and proc.stdout is not None
        token = f"\n{marker} ".encode()
        deadline = time.monotonic() + timeout
        fd = proc.stdout.fileno()
        while True:
            at = self._buffer.find(token)
            if at != -1:
                end = self._buffer.find(b"\n", at + len(token))
                if end != -1:
                    status = int(self._buffer[at + len(token) : end])
                    self._buffer = self._buffer[end + 1 :]
                    return status, False
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, True
            if watch and self._written(watch) > self._disk_limit:
                self._overflowed = True
                return None, True
            ready, _, _ = select.select([fd], [], [], min(remaining, _WATCH_EVERY))
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None, False
                self._buffer += chunk

    @staticmethod
    def _written(paths: tuple[Path, ...]) -> int:
        total = 0
        for path in paths:
            with contextlib.suppress(OSError):
                total += os.lstat(path).st_blocks * 512
        return total

    def _kill_children(self) -> None:
        """TERM every process of the shell but bash, then KILL what is left."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            deadline = time.monotonic() + _KILL_GRACE
            victims = self._children()
            for pid in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            while victims and time.monotonic() < deadline:
                time.sleep(0.01)
                victims = self._children()
            if not victims:
                return

    def _children(self) -> list[int]:
        """The processes a timeout stops: unsandboxed, bash's session but bash; sandboxed,
        everything in the sandbox but bash and bwrap's init. Orphans there are re-parented
        to that init and nothing can leave the pid namespace, so ``setsid`` or a double fork
        does not escape."""
        if self._proc is None:
            return []
        if not self._sandbox.enforced:
            return [pid for pid in session_members(self.pid) if pid != self.pid]
        table = live_processes()
        if self._bash_pid is None:
            self._bash_pid = sandboxed_pid(self.pid, table)
        init = next((info.ppid for info in table if info.pid == self._bash_pid), None)
        if init is None:
            return []
        return [pid for pid in descendants(init, table) if pid != self._bash_pid]

    def _read(self, path: Path) -> str:
        return _read_regular(path, self._output_limit)

    def _restart(self) -> None:
        self._terminate()
        self._start()

    def _terminate(self) -> None:
        proc = self._proc
        if proc is None:
            return
        kill_group(proc)
        self._kill_children()
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a command it never read: a broken pipe
                    stream.close()
        self._proc = None

    def close(self) -> None:
        """Stop bash and everything it started; remove the scratch folder."""
        self._terminate()
        shutil.rmtree(self._dir)
        if self._own_tmp is not None:
            shutil.rmtree(self._own_tmp)
