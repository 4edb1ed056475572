"""A persistent bash process that runs one command at a time.

Each command is written to a file and sourced by the same bash, so ``cd`` and ``export``
persist between calls. Its stdout and stderr go to their own files and its stdin is
``/dev/null`` (a command waiting for input gets end-of-file instead of hanging the session).
Every process bash starts stays below the process fencecall started, whatever session it
moves to: unsandboxed, bash runs under a reaper that adopts orphans and kills them all when
fencecall dies; sandboxed, under bwrap's init in a pid namespace. On timeout every process
below bash is killed (TERM, then KILL). If bash itself is stuck (a builtin loop) or dies
(``exit``), it is restarted and the result says so.

With a job manager, a command still running after ``background_after`` seconds, or one that
returned leaving processes behind (``cmd &``), is not killed: the whole bash that runs it
goes to the manager as a background job (see :mod:`.jobs`), and the next command starts a
new bash from the old one's working directory and exported variables.

With an enforced :class:`Sandbox`, bash runs inside bwrap. Its scratch folder is the only
place it shares with fencecall, so fencecall treats what is there as hostile: every file name
is new and random, and files are read without following symlinks. Its /tmp is a folder of
the session's (under ``WORKSPACE_WRITE``) rather than an empty tmpfs. A ``read_only`` run
happens in a fresh read-only sandbox that sees the persistent shell's working directory,
exported variables and /tmp but cannot change them.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import stat
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from .jobs import JobError, JobManager
from .output import cut_note
from .paths import host_program
from .processes import StartGate, kill_group, live_processes, readable, start_process
from .reaper import kill_tree, reaped, tree
from .sandbox import Sandbox, SandboxPolicy
from .scratch import make_scratch

_KILL_GRACE = 0.5
DISK_LIMIT = 64 * 1024 * 1024
"""Output a command may leave in its scratch files before it is stopped (a `yes` must not
fill the disk in the minute before its timeout)."""
_WATCH_EVERY = 0.25
_STATE_TIMEOUT = 5.0
_STATE_LIMIT = 16 * 1024 * 1024
"""Bytes of a shell's state (its exported variables) copied for a read-only run."""
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
    """Why the shell had to be restarted (its cwd and exported variables are kept, the rest
    of its state is not), if it was."""
    overflowed: bool = False
    """The command wrote more than the disk limit of output and was stopped."""
    job: int | None = None
    """The command goes on as this background job (the output is what it wrote so far)."""
    running_for: float | None = None
    """Seconds it had run when it became a job (None: it returned, leaving processes)."""
    note: str | None = None
    """Anything else the model should know (processes it left that were killed)."""


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


def _cut_bytes(data: bytes, limit: int) -> str:
    """``data`` as text, its head and tail kept when it exceeds ``limit`` bytes."""
    half = limit // 2
    if len(data) <= 2 * half:
        return data.decode("utf-8", errors="replace")
    head = data[:half].decode("utf-8", errors="replace")
    tail = data[-half:].decode("utf-8", errors="replace")
    return f"{head}\n{cut_note(len(data) - 2 * half, 'bytes')}\n{tail}"


def _first_child(pid: int) -> int | None:
    """The oldest child of ``pid``: the kernel lists children in the order they were made
    (orphans adopted later go to the end)."""
    try:
        words = Path(f"/proc/{pid}/task/{pid}/children").read_text().split()
    except OSError:  # a kernel without the children file: the lowest pid
        words = sorted((str(info.pid) for info in live_processes() if info.ppid == pid),
                       key=int)
    return int(words[0]) if words else None


_Why = Literal["marker", "timeout", "overflow", "dead"]


class _Bash:
    """One bash process and the line protocol fencecall speaks with it: commands in on its
    stdin, a marker with their exit status out on its stdout. Sandboxed, it runs in bwrap
    (whose init is pid 1 of the sandbox, bash pid 2); otherwise under a reaper, which adopts
    every orphan. Either way each process bash starts stays below :attr:`proc` in the process
    tree, whatever session or process group it moves to."""

    def __init__(self, proc: subprocess.Popen[bytes], sandboxed: bool):
        self.proc = proc
        self._sandboxed = sandboxed
        self._buffer = b""
        self._own: frozenset[int] | None = None

    def alive(self) -> bool:
        return self.proc.poll() is None

    def send(self, line: str) -> bool:
        """Write ``line`` to bash; False when it is gone."""
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(line.encode())
            self.proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            return False
        return True

    def wait_marker(self, marker: str, timeout: float, watch: tuple[Path, ...] = (),
                    disk_limit: int = 0) -> tuple[int | None, _Why]:
        """(exit status, why the wait ended): the marker came, the timeout passed, the files
        in ``watch`` grew past ``disk_limit`` (the disk is capped, not only what is read
        back), or bash died."""
        deadline = time.monotonic() + timeout
        while True:
            status = self._take(marker)
            if status is not None:
                return status, "marker"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, "timeout"
            if watch and _written(watch) > disk_limit:
                return None, "overflow"
            if not self._read(min(remaining, _WATCH_EVERY)):
                return None, "dead"

    def poll_marker(self, marker: str) -> tuple[bool, int | None]:
        """(done?, status) without waiting: done with a status once the marker came, done
        without one once bash died."""
        status = self._take(marker)
        if status is not None:
            return True, status
        if not self._read(0):
            return True, self.proc.poll()
        status = self._take(marker)
        return status is not None, status

    def _take(self, marker: str) -> int | None:
        """The status after ``marker`` once bash printed it. What comes before the marker is
        dropped as it arrives (a command can write to bash's own stdout: it must not grow
        fencecall's memory), and a status that is not a number is no status."""
        token = f"\n{marker} ".encode()
        while (at := self._buffer.find(token)) != -1:
            end = self._buffer.find(b"\n", at + len(token))
            if end == -1:
                self._buffer = self._buffer[at:]
                return None
            word = self._buffer[at + len(token) : end]
            self._buffer = self._buffer[end + 1 :]
            if word.isdigit() and len(word) < 4:
                return int(word)
        self._buffer = self._buffer[-len(token):]  # a token cut at the end of a read
        return None

    def _read(self, timeout: float) -> bool:
        """Read what bash wrote within ``timeout``; False at end of file (it died)."""
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        if readable(fd, timeout):
            chunk = os.read(fd, 65536)
            if not chunk:
                return False
            self._buffer += chunk
        return True

    def children(self) -> list[int]:
        """Every process below bash: what a timeout or a kill stops. Orphans are adopted by
        bwrap's init or the reaper, so ``setsid`` or a double fork does not escape."""
        if self.proc.returncode is not None:
            return []
        below = tree(self.proc.pid)
        if self._own is None:
            first = _first_child(self.proc.pid)  # bwrap's init, or bash under the reaper
            bash = _first_child(first) if first is not None and self._sandboxed else first
            if first is None or bash is None:
                return below
            self._own = frozenset({first, bash})
        return [pid for pid in below if pid not in self._own]

    def kill_children(self) -> None:
        """TERM every process below bash, then KILL what is left."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            deadline = time.monotonic() + _KILL_GRACE
            victims = self.children()
            for pid in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            while victims and time.monotonic() < deadline:
                time.sleep(0.01)
                victims = self.children()
            if not victims:
                return

    def terminate(self) -> None:
        """Kill bash and everything below it; reap it and close its pipes."""
        if self.proc.returncode is None:
            kill_tree(self.proc.pid)
            kill_group(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a command it never read: a broken pipe
                    stream.close()


def _written(paths: tuple[Path, ...]) -> int:
    total = 0
    for path in paths:
        with contextlib.suppress(OSError):
            total += os.lstat(path).st_blocks * 512
    return total


class _RetiredShell:
    """A bash handed to a job with the command it runs (a :class:`~.jobs.Running`): the job
    ends once bash printed ``marker`` and nothing is left below it."""

    def __init__(self, bash: _Bash, marker: str, files: tuple[Path, ...]):
        self._bash = bash
        self._marker = marker
        self._files = files
        self._done = False
        self._status: int | None = None

    def poll(self) -> tuple[bool, int | None]:
        if not self._done:
            self._done, self._status = self._bash.poll_marker(self._marker)
        return self._done and not self._bash.children(), self._status

    def kill(self) -> None:
        self._bash.kill_children()
        self._bash.terminate()

    def close(self) -> None:
        self._bash.terminate()
        _discard(*self._files)


class _OneShot:
    """A read-only run handed to a job (a :class:`~.jobs.Running`): bwrap and its pid
    namespace, which ends with it."""

    def __init__(self, proc: subprocess.Popen[bytes], files: tuple[Path, ...]):
        self._proc = proc
        self._files = files

    def poll(self) -> tuple[bool, int | None]:
        status = self._proc.poll()
        return status is not None, status

    def kill(self) -> None:
        if self._proc.returncode is None:
            kill_tree(self._proc.pid)
            kill_group(self._proc)

    def close(self) -> None:
        self.kill()
        _discard(*self._files)


class ShellSession:
    """One bash process; :meth:`run` executes a command in it.

    With ``jobs``, a command still running after ``background_after`` seconds, or one that
    left processes behind (``cmd &``), is handed to the manager with the whole bash that runs
    it, and the next command starts a new bash restored from the old one's state before that
    command (its working directory and exported variables; after ``cmd &``, its state after
    the command)."""

    def __init__(self, cwd: Path, *, env: dict[str, str] | None = None,
                 output_limit: int = 1_000_000, disk_limit: int = DISK_LIMIT,
                 sandbox: Sandbox | None = None, jobs: JobManager | None = None):
        self._cwd = cwd
        self._env = env
        self._output_limit = output_limit
        self._disk_limit = disk_limit
        self._jobs = jobs
        self._sandbox = sandbox or Sandbox(SandboxPolicy.OFF)
        self._dir = make_scratch("shell")
        self._own_tmp: Path | None = None
        if self._sandbox.policy is SandboxPolicy.WORKSPACE_WRITE and self._sandbox.tmp is None:
            # a folder rather than a tmpfs, so that read-only runs see the files in /tmp too
            self._own_tmp = make_scratch("tmp")
            self._sandbox = replace(self._sandbox, tmp=self._own_tmp)
        self._bash: _Bash | None = None
        self._restore: Path | None = None
        """The state a retired bash left, which the next bash starts from."""
        self._gate = StartGate("shell")
        self._start()

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ if self._env is None else self._env)
        env.setdefault("PAGER", "cat")
        env.setdefault("GIT_PAGER", "cat")
        env["TERM"] = "dumb"
        return env

    def _start(self) -> None:
        command = [_BASH, "--noprofile", "--norc"]
        if self._sandbox.enforced:
            argv = self._sandbox.command(command, scratch=[self._dir], cwd=self._cwd)
        else:
            argv = reaped(command, owner=self._dir.name)
        proc = self._gate.start(lambda: start_process(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=self._cwd, env=self._environment(),
            start_new_session=True, pass_fds=self._sandbox.pass_fds))
        self._bash = _Bash(proc, self._sandbox.enforced)

    def abort(self) -> None:
        """Kill the shell and what runs in it now (a read-only run too), from any thread,
        and never start it again: the command running ends, and later ones fail (a batch
        task's stop)."""
        bash = self._bash
        if bash is not None and bash.alive():
            kill_tree(bash.proc.pid)  # first: once bash is killed its orphans go to init
        self._gate.abort()

    @property
    def pid(self) -> int:
        """The process fencecall started: bwrap when sandboxed, else the reaper bash runs
        under. Every process of the shell is below it."""
        if self._bash is None:
            self._start()
        assert self._bash is not None
        return self._bash.proc.pid

    def alive(self) -> bool:
        return self._bash is not None and self._bash.alive()

    def has_processes(self) -> bool:
        """Whether anything the shell started runs now (between commands: what a command
        left that did not become a job)."""
        return bool(self._children())

    def _children(self) -> list[int]:
        return [] if self._bash is None else self._bash.children()

    def run(self, command: str, timeout: float = 60.0, *, read_only: bool = False,
            background_after: float | None = None) -> ShellResult:
        """Run ``command``; wait at most ``timeout`` seconds. With ``background_after`` (and
        a job manager with room) a command still running then becomes a job instead. With
        ``read_only`` it runs in a one-shot read-only sandbox (which needs an enforced
        sandbox: ValueError otherwise)."""
        if self._jobs is None or not self._jobs.room() or \
                (background_after is not None and background_after >= timeout):
            background_after = None
        if read_only:
            if not self._sandbox.enforced:
                raise ValueError("read_only needs an enforced sandbox")
            return self._run_read_only(command, timeout, background_after)
        token = secrets.token_hex(8)
        script, out, err, state = (self._dir / f"{token}{suffix}"
                                   for suffix in (".sh", ".out", ".err", ".state"))
        _create(script, command + "\n")
        kept: tuple[Path, ...] = ()
        try:
            result, kept = self._run(command, (script, out, err, state), timeout,
                                     background_after)
            return result
        finally:
            _discard(*(path for path in (script, out, err, state) if path not in kept))

    def _run(self, command: str, files: tuple[Path, Path, Path, Path], timeout: float,
             background_after: float | None) -> tuple[ShellResult, tuple[Path, ...]]:
        """The result, and the files a job took over or the next bash starts from."""
        script, out, err, state = files
        restarted = None
        if self._bash is None:
            self._start()
        elif not self._bash.alive():
            restarted = "the previous shell had exited"
            self._restart()
        bash = self._bash
        assert bash is not None
        marker = secrets.token_hex(8)
        restore, self._restore = self._restore, None
        line = ((f"builtin source {shlex.quote(str(restore))} >/dev/null 2>&1; "
                 if restore is not None else "")
                + f"{{ builtin printf 'builtin cd -- %q\\n' \"$PWD\"; builtin export -p; }} "
                f">{shlex.quote(str(state))} 2>/dev/null; "
                f"builtin source {shlex.quote(str(script))} >{shlex.quote(str(out))} "
                f"2>{shlex.quote(str(err))} </dev/null; "
                f"builtin printf '\\n{marker} %s\\n' \"$?\"\n")
        try:
            if not bash.send(line):  # it died since: start another (its pipes closed first)
                self._restart()
                self._restore = restore
                return self._run(command, files, timeout, background_after)
            return self._wait(command, bash, marker, files, timeout, background_after,
                              restarted)
        finally:
            if restore is not None:
                _discard(restore)

    def _wait(self, command: str, bash: _Bash, marker: str,
              files: tuple[Path, Path, Path, Path], timeout: float,
              background_after: float | None,
              restarted: str | None) -> tuple[ShellResult, tuple[Path, ...]]:
        script, out, err, state = files
        watch = (out, err)
        first = timeout if background_after is None else background_after
        try:
            status, why = bash.wait_marker(marker, first, watch, self._disk_limit)
            if why == "timeout" and background_after is not None:
                job = self._retire(command, bash, marker, (script, out, err), restore=state,
                                   ran_for=first)
                if job is not None:
                    return job, (script, out, err, state)
                status, why = bash.wait_marker(marker, timeout - first, watch,
                                               self._disk_limit)
        except KeyboardInterrupt:  # Ctrl-C: stop the command too, keep the shell
            bash.kill_children()
            bash.wait_marker(marker, _KILL_GRACE * 2)
            raise
        note = None
        if why == "marker" and self._jobs is not None and bash.children():
            job = self._retire_left_behind(command, bash, (script, out, err), status)
            if job is not None:
                return job, (script, out, err)
            bash.kill_children()
            note = (f"It left processes running in the background, which were killed: "
                    f"{self._jobs.max_jobs} jobs are running already (the limit).")
        if why in ("timeout", "overflow"):
            bash.kill_children()
            status, _ = bash.wait_marker(marker, _KILL_GRACE * 2)
        kept: tuple[Path, ...] = ()
        if status is None:
            reason = ("the command did not stop on timeout" if why != "dead"
                      else "the command exited the shell")
            try:
                status = bash.proc.wait(timeout=_KILL_GRACE) if why == "dead" else None
            except subprocess.TimeoutExpired:
                status = None
            self._restart()
            self._restore, kept = state, (state,)  # the state from before the command
            restarted = (f"{reason}; its working directory and exported variables are as "
                         "before the command, functions and other variables are gone")
        stopped = why in ("timeout", "overflow")
        return ShellResult(self._read(out), self._read(err), None if stopped else status,
                           why == "timeout", restarted, why == "overflow",
                           note=note), kept

    def _retire(self, command: str, bash: _Bash, marker: str, files: tuple[Path, ...], *,
                restore: Path, ran_for: float) -> ShellResult | None:
        """Hand ``bash``, still running ``command``, to the jobs; the next bash starts from
        ``restore``. None where no job may start."""
        assert self._jobs is not None
        try:
            job, so_far = self._jobs.adopt(command, _RetiredShell(bash, marker, files),
                                           files[1:], ran_for=ran_for)
        except JobError:
            return None
        self._bash, self._restore = None, restore
        return self._job_result(job, so_far, running_for=ran_for)

    def _retire_left_behind(self, command: str, bash: _Bash, files: tuple[Path, ...],
                            status: int | None) -> ShellResult | None:
        """Hand ``bash``, whose command returned but left processes running, to the jobs:
        the job ends when they have all ended, with the exit status of the last one bash
        started (``$!``). The next bash starts from this one's state now."""
        assert self._jobs is not None
        after = self._exported_state(self._dir / f"{secrets.token_hex(8)}.state")
        marker = secrets.token_hex(8)
        if not bash.send(f"builtin wait $! 2>/dev/null; "
                         f"builtin printf '\\n{marker} %s\\n' \"$?\"\n"):
            return None
        try:
            job, so_far = self._jobs.adopt(command, _RetiredShell(bash, marker, files),
                                           files[1:])
        except JobError:
            if after is not None:
                _discard(after)
            return None
        self._bash, self._restore = None, after
        return self._job_result(job, so_far, running_for=None, returned=status)

    def _job_result(self, job: int, so_far: tuple[bytes, ...], *,
                    running_for: float | None, returned: int | None = None) -> ShellResult:
        stdout, stderr = (_cut_bytes(data, self._output_limit) for data in so_far)
        return ShellResult(stdout, stderr, returned, job=job, running_for=running_for)

    def _run_read_only(self, command: str, timeout: float,
                       background_after: float | None) -> ShellResult:
        """Run ``command`` in a fresh read-only sandbox, in the persistent shell's working
        directory and with its exported variables; the persistent shell is left as it was.
        The run gets a scratch folder of its own, never the shell's: it runs unasked, so it
        must not reach the scripts and state the writable shell sources next."""
        own = make_scratch("readonly")
        state = self._state_copy(own / "state")
        script, out, err, tmp, setup = (own / name
                                        for name in ("sh", "out", "err", "tmp", "setup"))
        kept = False
        try:
            _create(script, command + "\n")
            tmp.mkdir()
            argv = self._sandbox.read_only().command(
                [_BASH, "--noprofile", "--norc", "-c", _ONE_SHOT, "bash",
                 *map(str, (state or "/dev/null", script, out, err, tmp))],
                scratch=[own], cwd=self._cwd)
            fd = os.open(setup, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
            try:  # bwrap's own errors, to a file: a pipe would hold whatever the run sends
                proc = self._gate.start(lambda: start_process(
                    argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=fd,
                    cwd=self._cwd, start_new_session=True,
                    env={} if state else self._environment(),
                    pass_fds=self._sandbox.pass_fds))
            finally:
                os.close(fd)
            first = timeout if background_after is None else background_after
            try:
                try:
                    proc.wait(timeout=first)
                except subprocess.TimeoutExpired:
                    if background_after is None:
                        raise
                    assert self._jobs is not None
                    try:
                        job, so_far = self._jobs.adopt(command, _OneShot(proc, (own,)),
                                                       (out, err), ran_for=background_after)
                    except JobError:
                        proc.wait(timeout=timeout - first)
                    else:
                        kept = True
                        return self._job_result(job, so_far, running_for=background_after)
            except subprocess.TimeoutExpired:
                kill_group(proc)
                return ShellResult(self._read(out), self._read(err), None, True)
            except KeyboardInterrupt:
                kill_group(proc)
                raise
            stderr = self._read(setup) + self._read(err)
            return ShellResult(self._read(out), stderr, proc.returncode)
        finally:
            if not kept:
                _discard(own)

    def _state_copy(self, path: Path) -> Path | None:
        """``path``, holding a copy of the state the persistent shell would start the next
        command from (read by descriptor from its scratch folder); None without one."""
        if self._bash is None:
            source = self._restore
        else:
            source = self._exported_state(self._dir / f"{secrets.token_hex(8)}.state")
        if source is None:
            return None
        try:
            text = _read_regular(source, _STATE_LIMIT)
        finally:
            if source is not self._restore:
                _discard(source)
        _create(path, text)
        return path

    def _exported_state(self, path: Path) -> Path | None:
        """``path``, once the persistent shell wrote there a script that recreates its working
        directory and exported variables; None when it is not running or does not answer."""
        bash = self._bash
        if bash is None or not bash.alive():
            return None
        marker = secrets.token_hex(8)
        line = (f"{{ builtin printf 'builtin cd -- %q\\n' \"$PWD\"; builtin export -p; }} "
                f">{shlex.quote(str(path))} 2>/dev/null; "
                f"builtin printf '\\n{marker} %s\\n' 0\n")
        if not bash.send(line):
            return None
        status, _ = bash.wait_marker(marker, _STATE_TIMEOUT)
        return path if status is not None else None

    def _read(self, path: Path) -> str:
        return _read_regular(path, self._output_limit)

    def _restart(self) -> None:
        if self._bash is not None:
            self._bash.kill_children()
            self._bash.terminate()
        self._start()

    def close(self) -> None:
        """Stop bash and everything it started; remove the scratch folder (a job's files
        stay open where it runs on)."""
        if self._bash is not None:
            self._bash.kill_children()
            self._bash.terminate()
            self._bash = None
        shutil.rmtree(self._dir, ignore_errors=True)  # the sandbox may leave what it cannot
        if self._own_tmp is not None:
            shutil.rmtree(self._own_tmp, ignore_errors=True)
