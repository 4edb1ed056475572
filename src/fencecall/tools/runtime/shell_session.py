"""A persistent bash process that runs one command at a time.

Each command is written to an unnamed file and sourced by the same bash, so ``cd`` and
``export`` persist between calls: bash inherited a read-only descriptor of it, and the file
is read-only to all, so nothing in the sandbox can change the next command. Its stdout and
stderr go to unnamed files that fencecall holds by descriptor (see :mod:`._capture`) and
bash inherited, and its stdin is ``/dev/null`` (a command waiting for input gets end-of-file
instead of hanging the session). Every process bash starts stays below the process fencecall
started, whatever session it moves to: unsandboxed, bash runs under a reaper that adopts
orphans and kills them all when fencecall dies; sandboxed, under bwrap's init in a pid
namespace.

Stopping a command stops all of it. On a timeout, past the output cap, or on Ctrl-C, bash
itself is killed with everything below it, so the rest of the line (``sleep 60; git push``,
a loop, an ``&&`` chain) never runs; the next command gets a new bash with the working
directory and exported variables the old one had before the command. The same happens when
bash is stuck (a builtin loop) or exits, and the result says so.

With a job manager, a command still running after ``background_after`` seconds, or one that
returned leaving processes behind (``cmd &``), is not killed: the whole bash that runs it
goes to the manager as a background job (see :mod:`.job_manager`), and the next command starts a
new bash from the old one's working directory and exported variables.

With an enforced :class:`Sandbox`, bash runs inside bwrap. It shares no writable folder with
fencecall: the state a stopped shell leaves for the next is in a scratch folder it sees
read-only, and what it writes goes to the inherited descriptors, capped by polling their
blocks and by ``RLIMIT_FSIZE``. Its /tmp is a folder of the session's (under
``WORKSPACE_WRITE``) rather than an empty tmpfs. A ``read_only`` run, which nobody
confirmed, happens in a fresh read-only sandbox without network that sees the persistent
shell's working directory, exported variables and /tmp but cannot change them; it writes
nothing on the host but its capped output, its temporary files go to a small private tmpfs,
and git runs in it with the repository's programs off (see :mod:`._git_guard`).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Literal

from ...environments import Environment
from ...sandbox import (
    ResourceLimits,
    Sandbox,
    SandboxPolicy,
    SessionAborted,
    StartGate,
    freeze_and_kill,
    host_program,
    kill_group,
    kill_tree,
    live_processes,
    lone_child,
    make_scratch,
    readable,
    reaped,
    sandboxed_pid,
    start_process,
    tree,
    unconfirmed_filter,
)
from ...sandbox.scratch import PREFIX
from . import _capture
from . import _in_environment as in_environment
from ._git_guard import GUARD
from .job_manager import JobError, JobManager
from .output import cut_note

_KILL_GRACE = 0.5
DISK_LIMIT = ResourceLimits().output
"""Output a command may leave in its capture files before it is stopped (a `yes` must not
fill the disk in the minute before its timeout), unless the sandbox's limits say otherwise."""
_WATCH_EVERY = 0.25
_STATE_TIMEOUT = 5.0
_STATE_LIMIT = 16 * 1024 * 1024
"""Bytes of a shell's state (its exported variables) carried to the next bash or a
read-only run; a bigger one is not carried."""
_BASH = host_program("bash") or "/bin/bash"
_ONE_SHOT = ('builtin source "/dev/fd/$1" >/dev/null 2>&1; export TMPDIR=/dev/shm; '
             + GUARD + 'builtin source "/dev/fd/$2" </dev/null')
"""The read-only run: restore the state, then the command as the persistent shell runs it.
Its /tmp is the shell's, read-only, so temporary files go to the sandbox's small tmpfs."""


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
    stopped_at: str | None = None
    """What the command was running when it was stopped (timeout, overflow): the rest of
    it did not run."""


def _save_state(target: str) -> str:
    """The bash that writes the shell's state as it is then (its working directory and
    exported variables) to ``target``, as a script that recreates it in another bash."""
    return (f"{{ builtin printf 'builtin cd -- %q\\n' \"$PWD\"; builtin export -p; }} "
            f">{target} 2>/dev/null; ")


def _create(path: Path, text: str, mode: int = 0o600) -> None:
    """Write a new file; fails rather than follow anything put at ``path``."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
    with os.fdopen(fd, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write(text)


def _discard(*paths: Path) -> None:
    """Remove files or folders, following no link."""
    for path in paths:
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)


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


def _running(bash: int | None) -> str | None:
    """The command line of what ``bash`` runs now (its first child), for a stop's report."""
    child = _first_child(bash) if bash is not None else None
    if child is None:
        return None
    try:
        raw = Path(f"/proc/{child}/cmdline").read_bytes()[:4096]
    except OSError:
        return None
    words = raw.rstrip(b"\0").decode("utf-8", errors="replace").split("\0")
    return " ".join(words) if words and words[0] else None


_Why = Literal["marker", "timeout", "overflow", "dead"]


class _Capture:
    """The unnamed files a bash writes a command's stdout, stderr and state to, which it
    inherits as descriptors (``/dev/fd/N``, a duplicate in bash's redirections) and which
    are cleared before each command; and the one it reads each command from (it inherits a
    read-only descriptor of it)."""

    def __init__(self) -> None:
        opened: list[int] = []
        try:
            for _ in range(3):
                opened.append(_capture.unnamed_file())
            opened += _capture.script_file()
        except BaseException:
            _capture.close(*opened)
            raise
        self.out, self.err, self.state, self.script, self.script_in = opened
        self._closed = False

    @property
    def fds(self) -> tuple[int, int, int, int]:
        """What bash inherits, in the order of :attr:`_Bash.paths`."""
        return self.out, self.err, self.state, self.script_in

    def clear(self) -> None:
        _capture.clear(self.out, self.err, self.state)

    def written(self) -> int:
        return _capture.on_disk(self.out, self.err)

    def state_text(self) -> str | None:
        data = _capture.read_all(self.state, _STATE_LIMIT)
        return None if data is None else data.decode("utf-8", errors="surrogateescape")

    def close(self) -> None:
        """Close the files, once (a number closed twice may be another file's by then)."""
        if not self._closed:
            self._closed = True
            _capture.close(*self.fds, self.script)


class _Bash:
    """One bash process and the line protocol fencecall speaks with it: commands in on its
    stdin, a marker with their exit status out on its stdout. Sandboxed, it runs in bwrap
    (whose init is pid 1 of the sandbox, bash pid 2); otherwise under a reaper, which adopts
    every orphan. Either way each process bash starts stays below :attr:`proc` in the process
    tree, whatever session or process group it moves to."""

    def __init__(self, proc: subprocess.Popen[bytes], sandboxed: bool, files: _Capture,
                 root: int | None = None, paths: tuple[str, ...] = ()):
        self.proc = proc
        self.files = files
        self.root = proc.pid if root is None else root
        """The process every one of the shell's is below (bash's init in an environment)."""
        self.paths = paths or tuple(f"/dev/fd/{fd}" for fd in files.fds)
        """Where bash finds the files: stdout, stderr, state, the command."""
        self._held = root is not None
        """Whether :attr:`root` is an init that exits with bash, to be stopped first."""
        self._sandboxed = sandboxed
        self._buffer = b""
        self._own: frozenset[int] | None = None
        self._bash: int | None = None
        self._adopter: int | None = None
        """Where bash's orphans go: bwrap's init, the reaper or an environment's init."""

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

    def wait_marker(self, marker: str, timeout: float,
                    disk_limit: int = 0) -> tuple[int | None, _Why]:
        """(exit status, why the wait ended): the marker came, the timeout passed, the output
        grew past ``disk_limit`` on disk (0: not watched), or bash died."""
        deadline = time.monotonic() + timeout
        while True:
            status = self._take(marker)
            if status is not None:
                return status, "marker"
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, "timeout"
            if disk_limit and self.files.written() >= disk_limit:
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
        below = tree(self.root)
        return below if not self._find_own() else \
            [pid for pid in below if pid not in (self._own or ())]

    def has_children(self) -> bool:
        """Whether :meth:`children` has any: from the lists of children of bash and of the
        process its orphans go to (bwrap's init, the reaper, an environment's init) where
        those tell, without reading the whole tree."""
        if self.proc.returncode is not None:
            return False
        if self._find_own() and self._bash is not None and self._adopter is not None:
            alone = lone_child(self._adopter, self._bash)
            if alone is not None:
                return not alone
        return bool(self.children())

    def _find_own(self) -> bool:
        """Find bash, and bwrap's init above it, once; whether they were found."""
        if self._own is None:
            first = _first_child(self.root)  # bwrap's init, or bash under the reaper
            bash = _first_child(first) if first is not None and self._sandboxed else first
            if first is None or bash is None:
                return False
            self._own, self._bash = frozenset({first, bash}), bash
            self._adopter = first if self._sandboxed else self.root
        return True

    def running(self) -> str | None:
        """What bash runs now (its first child's command line), for a stop's report."""
        self._find_own()
        return _running(self._bash)

    def kill_bash(self) -> None:
        """SIGKILL bash itself, not what runs below it: it runs nothing more."""
        self._find_own()
        self.hold()
        if self._bash is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._bash, signal.SIGKILL)
        elif self.proc.returncode is None:  # bash not found below: the whole tree
            kill_tree(self.root)

    def hold(self) -> None:
        """Stop an init that would exit with bash (SIGSTOP), so the processes below it stay
        below it until they are killed."""
        if self._held:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.root, signal.SIGSTOP)

    def freeze_and_kill(self) -> None:
        """SIGKILL every process below bash with no warning (no handler of theirs runs)."""
        self._find_own()
        spare = (self._own or frozenset()) - {self._bash}
        freeze_and_kill(self.root, frozenset(spare))

    def kill_children(self) -> None:
        """TERM every process below bash, then KILL what is left."""
        if not self.has_children():
            return
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
            if not self._end_namespace():
                self.hold()
                kill_tree(self.root)
                if self._held:
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(self.root, signal.SIGKILL)
            kill_group(self.proc)
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):  # a command it never read: a broken pipe
                    stream.close()

    def _end_namespace(self) -> bool:
        """Sandboxed: SIGKILL bwrap's init, which takes every process of its pid namespace
        with it (the kernel's doing: none can leave the namespace), and wait for bwrap, which
        exits once its init has, that is once they are all gone. False where that is not how
        it ended (unsandboxed, or bwrap still there after a while): kill the tree then."""
        if not self._sandboxed:
            return False
        init = _first_child(self.root)
        if init is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(init, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(_KILL_GRACE)
        return self.proc.returncode is not None

    def close(self) -> None:
        """:meth:`terminate`, and let go of its files."""
        self.terminate()
        self.files.close()


class _RetiredShell:
    """A bash handed to a job with the command it runs (a :class:`~.job_manager.Running`): the job
    ends once bash printed ``marker`` and nothing is left below it."""

    def __init__(self, bash: _Bash, marker: str):
        self._bash = bash
        self._marker = marker
        self._done = False
        self._status: int | None = None

    def poll(self) -> tuple[bool, int | None]:
        if not self._done:
            self._done, self._status = self._bash.poll_marker(self._marker)
        return self._done and not self._bash.has_children(), self._status

    def kill(self) -> None:
        self._bash.kill_children()
        self._bash.terminate()

    def close(self) -> None:
        self._bash.close()


class _OneShot:
    """A read-only run handed to a job (a :class:`~.job_manager.Running`): bwrap and its pid
    namespace, which ends with it."""

    def __init__(self, proc: subprocess.Popen[bytes], fds: tuple[int, ...]):
        self._proc = proc
        self._fds = fds

    def poll(self) -> tuple[bool, int | None]:
        status = self._proc.poll()
        return status is not None, status

    def kill(self) -> None:
        if self._proc.returncode is None:
            kill_tree(self._proc.pid)
            kill_group(self._proc)

    def close(self) -> None:
        self.kill()
        _capture.close(*self._fds)


class ShellSession:
    """One bash process; :meth:`run` executes a command in it.

    With ``jobs``, a command still running after ``background_after`` seconds, or one that
    left processes behind (``cmd &``), is handed to the manager with the whole bash that runs
    it, and the next command starts a new bash restored from the old one's state before that
    command (its working directory and exported variables; after ``cmd &``, its state after
    the command). ``disk_limit`` is the output a command may write (default: the sandbox's
    ``limits.output``). With an ``environment`` bash runs there (see
    :mod:`._in_environment`), in its working folder, with only the variables of ``env``,
    and ``cwd`` and ``sandbox`` are not used."""

    def __init__(self, cwd: Path, *, env: dict[str, str] | None = None,
                 output_limit: int = 1_000_000, disk_limit: int | None = None,
                 sandbox: Sandbox | None = None, jobs: JobManager | None = None,
                 environment: Environment | None = None):
        self._cwd = cwd
        self._place = environment
        self._env = env
        self._output_limit = output_limit
        self._jobs = jobs
        self._sandbox = sandbox or Sandbox(SandboxPolicy.OFF)
        self._disk_limit = self._sandbox.limits.output if disk_limit is None else disk_limit
        self._dir: Path | None = None
        """The states that stopped shells leave for the next, which it sees read-only: made
        with the first one."""
        self._mode = 0o600 if environment is None else 0o644
        """An environment's user may be anyone: its states are readable to all, in a
        folder nobody else may list."""
        self._owner = f"{PREFIX}shell-{os.getpid()}-{id(self):x}"
        """The label of the reaper that bash runs under unsandboxed (see :func:`reaped`)."""
        self._own_tmp: Path | None = None
        if self._sandbox.policy is SandboxPolicy.WORKSPACE_WRITE and self._sandbox.tmp is None:
            # a folder rather than a tmpfs, so that read-only runs see the files in /tmp too
            self._own_tmp = make_scratch("tmp")
            self._sandbox = replace(self._sandbox, tmp=self._own_tmp)
        self._bash: _Bash | None = None
        self._restore: Path | None = None
        """The state a stopped or retired bash left, which the next bash starts from."""
        self._gate = StartGate("shell")
        self._closed = False
        self._start()

    def _environment(self) -> dict[str, str]:
        env = dict(os.environ if self._env is None else self._env)
        env.setdefault("PAGER", "cat")
        env.setdefault("GIT_PAGER", "cat")
        env["TERM"] = "dumb"
        return env

    def _start(self) -> None:
        if self._closed:
            raise SessionAborted("the shell was closed; nothing runs in it again")
        if self._place is not None:
            self._bash = self._start_in(self._place)
            return
        command = [_BASH, "--noprofile", "--norc"]
        if self._sandbox.enforced:
            argv = self._sandbox.command(command, inputs=[self._dir] if self._dir else [],
                                         cwd=self._cwd)
        else:
            argv = reaped(command, owner=self._owner)
        files = _Capture()
        try:
            proc = self._gate.start(lambda: start_process(
                argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL, cwd=self._cwd, env=self._environment(),
                start_new_session=True, pass_fds=(*self._sandbox.pass_fds, *files.fds),
                limits=self._sandbox.limits, reaper=not self._sandbox.enforced))
        except BaseException:
            files.close()
            raise
        self._bash = _Bash(proc, self._sandbox.enforced, files)

    def _start_in(self, environment: Environment) -> _Bash:
        """A bash in ``environment``, below an init of its own there."""
        files = _Capture()
        try:
            proc = self._gate.start(lambda: in_environment.spawn_bash(
                environment, files.fds, self._env))
            try:
                init = in_environment.init_of_bash(environment, proc)
            except BaseException:
                kill_group(proc)
                raise
        except BaseException:
            files.close()
            raise
        return _Bash(proc, False, files, root=init, paths=in_environment.PATHS)

    def abort(self) -> None:
        """Kill the shell and what runs in it now (a read-only run too), from any thread,
        and never start it again: the command running ends, and later ones fail (a batch
        task's stop)."""
        bash = self._bash
        if bash is not None and bash.alive():
            bash.hold()
            kill_tree(bash.root)  # first: once bash is killed its orphans go to init
        self._gate.abort()

    @property
    def pid(self) -> int:
        """The process fencecall started: bwrap when sandboxed, else the reaper bash runs
        under (in an environment, bash's init there, by host pid). Every process of the
        shell is below it."""
        if self._bash is None:
            self._start()
        assert self._bash is not None
        return self._bash.root

    def alive(self) -> bool:
        return self._bash is not None and self._bash.alive()

    def has_processes(self) -> bool:
        """Whether anything the shell started runs now (between commands: what a command
        left that did not become a job)."""
        return self._bash is not None and self._bash.has_children()

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
        return self._run(command, timeout, background_after)

    def _run(self, command: str, timeout: float, background_after: float | None) -> ShellResult:
        restarted = None
        if self._bash is None:
            self._start()
        elif not self._bash.alive():
            restarted = "the previous shell had exited"
            self._restart()
        bash = self._bash
        assert bash is not None
        bash.files.clear()
        _capture.rewrite(bash.files.script, command + "\n")
        marker = secrets.token_hex(8)
        restore, self._restore = self._restore, None
        out, err, state, script = bash.paths
        line = ((f"builtin source {shlex.quote(str(restore))} >/dev/null 2>&1; "
                 if restore is not None else "")
                + _save_state(state)
                + f"builtin source {script} >{out} 2>{err} </dev/null; "
                f"builtin printf '\\n{marker} %s\\n' \"$?\"\n")
        try:
            if not bash.send(line):  # it died since: start another (its pipes closed first)
                self._restart()
                self._restore = restore
                return self._run(command, timeout, background_after)
            return self._wait(command, bash, marker, timeout, background_after, restarted)
        finally:
            if restore is not None:
                _discard(restore)

    def _wait(self, command: str, bash: _Bash, marker: str, timeout: float,
              background_after: float | None, restarted: str | None) -> ShellResult:
        first = timeout if background_after is None else background_after
        try:
            status, why = bash.wait_marker(marker, first, self._disk_limit)
            if why == "timeout" and background_after is not None:
                job = self._retire(command, bash, marker, ran_for=first)
                if job is not None:
                    return job
                status, why = bash.wait_marker(marker, timeout - first, self._disk_limit)
        except (KeyboardInterrupt, SystemExit):  # Ctrl-C, SIGTERM: the whole command ends
            self._stop(bash)
            raise
        if why == "marker":
            return self._returned(command, bash, status, restarted)
        stopped_at = bash.running() if why != "dead" else None
        stdout, stderr = self._read(bash.files.out), self._read(bash.files.err)
        if why == "dead":
            with contextlib.suppress(subprocess.TimeoutExpired):
                status = bash.proc.wait(timeout=_KILL_GRACE)
            reason = "the command exited the shell"
        else:
            reason = "the command was stopped"
        self._stop(bash)
        self._start()  # now: a session aborted meanwhile refuses it (SessionAborted)
        restarted = (f"{reason}; its working directory and exported variables are as before "
                     "the command, functions and other variables are gone")
        stopped = why in ("timeout", "overflow")
        return ShellResult(stdout, stderr, None if stopped else status, why == "timeout",
                           restarted, why == "overflow", stopped_at=stopped_at)

    def _returned(self, command: str, bash: _Bash, status: int | None,
                  restarted: str | None) -> ShellResult:
        """The result of a command that returned: processes it left running go on as a job
        where one may start, else they are killed."""
        note = None
        if self._jobs is not None and bash.has_children():
            job = self._retire_left_behind(command, bash, status)
            if job is not None:
                return job
            bash.kill_children()
            note = (f"It left processes running in the background, which were killed: "
                    f"{self._jobs.max_jobs} jobs are running already (the limit).")
        return ShellResult(self._read(bash.files.out), self._read(bash.files.err), status,
                           restarted=restarted, note=note)

    def _stop(self, bash: _Bash) -> None:
        """End the command as a whole: bash first (so nothing after the part running now can
        start), then every process below it. The next command gets a new bash with the
        working directory and exported variables from before this command."""
        state = bash.files.state_text()
        bash.kill_bash()
        bash.freeze_and_kill()
        bash.close()
        if self._bash is bash:
            self._bash = None
        self._restore = self._restore_file(state)

    def _restore_file(self, state: str | None) -> Path | None:
        """A script the next bash sources to get ``state`` back (None: nothing to restore)."""
        if state is None:
            return None
        if self._dir is None:
            self._dir = make_scratch("shell") if self._place is None else \
                in_environment.scratch_folder(self._place, "shell")
        path = self._dir / f"{secrets.token_hex(8)}.state"
        _create(path, state, self._mode)
        return path

    def _retire(self, command: str, bash: _Bash, marker: str, *,
                ran_for: float) -> ShellResult | None:
        """Hand ``bash``, still running ``command``, to the jobs; the next bash starts from
        the state before the command. None where no job may start."""
        assert self._jobs is not None
        state = bash.files.state_text()
        try:
            job, so_far = self._jobs.adopt(command, _RetiredShell(bash, marker),
                                           (bash.files.out, bash.files.err), ran_for=ran_for)
        except JobError:
            return None
        self._bash, self._restore = None, self._restore_file(state)
        return self._job_result(job, so_far, running_for=ran_for)

    def _retire_left_behind(self, command: str, bash: _Bash,
                            status: int | None) -> ShellResult | None:
        """Hand ``bash``, whose command returned but left processes running, to the jobs:
        the job ends when they have all ended, with the exit status of the last one bash
        started (``$!``). The next bash starts from this one's state now."""
        assert self._jobs is not None
        after = self._exported_state(bash)
        stdout, stderr = self._read(bash.files.out), self._read(bash.files.err)
        marker = secrets.token_hex(8)
        if not bash.send(f"builtin wait $! 2>/dev/null; "
                         f"builtin printf '\\n{marker} %s\\n' \"$?\"\n"):
            return None
        try:
            job, _ = self._jobs.adopt(command, _RetiredShell(bash, marker),
                                      (bash.files.out, bash.files.err))
        except JobError:
            return None
        self._bash, self._restore = None, self._restore_file(after)
        return ShellResult(stdout, stderr, status, job=job)

    def _job_result(self, job: int, so_far: tuple[bytes, ...], *,
                    running_for: float | None) -> ShellResult:
        stdout, stderr = (_cut_bytes(data, self._output_limit) for data in so_far)
        return ShellResult(stdout, stderr, None, job=job, running_for=running_for)

    def _run_read_only(self, command: str, timeout: float,
                       background_after: float | None) -> ShellResult:
        """Run ``command`` in a fresh read-only sandbox without network, in the persistent
        shell's working directory and with its exported variables; the persistent shell is
        left as it was. Nobody confirmed it: it shares no folder with fencecall (its state
        and script come in, its output goes out, through inherited unnamed files), so it
        cannot reach the scripts and state the writable shell sources next."""
        sandbox = self._sandbox.read_only()
        state = self._state_text()
        out, err = _capture.unnamed_file(), _capture.unnamed_file()
        inputs = (_capture.holding(state or ""), _capture.holding(command + "\n"))
        program = unconfirmed_filter()
        seccomp = _capture.holding(program) if program is not None else None
        argv = sandbox.command([_BASH, "--noprofile", "--norc", "-c", _ONE_SHOT, "bash",
                                *map(str, inputs)], cwd=self._cwd, seccomp=seccomp)
        kept = False
        try:
            proc = self._gate.start(lambda: start_process(
                argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=self._cwd,
                start_new_session=True, env={} if state else self._environment(),
                pass_fds=(*sandbox.pass_fds, *inputs, *([seccomp] if seccomp else [])),
                limits=sandbox.limits))
            first = timeout if background_after is None else background_after
            why = self._watch(proc, (out, err), first)
            if why == "timeout" and background_after is not None:
                assert self._jobs is not None
                try:
                    job, so_far = self._jobs.adopt(command, _OneShot(proc, (out, err, *inputs)),
                                                   (out, err), ran_for=first)
                except JobError:
                    why = self._watch(proc, (out, err), timeout - first)
                else:
                    kept = True
                    return self._job_result(job, so_far, running_for=first)
            stopped_at = None if why == "ended" else _one_shot_running(proc)
            if why != "ended":
                kill_tree(proc.pid)
                kill_group(proc)
            return ShellResult(self._read(out), self._read(err),
                               proc.returncode if why == "ended" else None, why == "timeout",
                               overflowed=why == "overflow", stopped_at=stopped_at)
        except KeyboardInterrupt:
            if "proc" in locals():
                kill_tree(proc.pid)
                kill_group(proc)
            raise
        finally:
            _capture.close(seccomp)  # bwrap read it at its start
            if not kept:
                _capture.close(out, err, *inputs)

    def _watch(self, proc: subprocess.Popen[bytes], fds: tuple[int, int],
               seconds: float) -> Literal["ended", "timeout", "overflow"]:
        """Wait up to ``seconds`` for ``proc`` to end, watching what it wrote on disk: output
        that reached the cap is an overflow, whether the watch or ``RLIMIT_FSIZE`` stopped
        it."""
        deadline = time.monotonic() + seconds
        while True:
            left = deadline - time.monotonic()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=max(0.0, min(left, _WATCH_EVERY)))
            if _capture.on_disk(*fds) >= self._disk_limit:  # RLIMIT_FSIZE may have ended it
                return "overflow"
            if proc.returncode is not None:
                return "ended"
            if left <= _WATCH_EVERY:
                return "timeout"

    def _state_text(self) -> str | None:
        """The state the persistent shell would start the next command from: its working
        directory and exported variables (None: none to be had)."""
        if self._bash is not None:
            return self._exported_state(self._bash)
        if self._restore is None:
            return None
        fd = os.open(self._restore, os.O_RDONLY | os.O_NOFOLLOW)
        try:
            data = _capture.read_all(fd, _STATE_LIMIT)
        finally:
            os.close(fd)
        return None if data is None else data.decode("utf-8", errors="surrogateescape")

    def _exported_state(self, bash: _Bash) -> str | None:
        """The working directory and exported variables ``bash`` has now, as a script that
        recreates them; None when it is not running or does not answer."""
        if not bash.alive():
            return None
        _capture.clear(bash.files.state)
        marker = secrets.token_hex(8)
        line = (_save_state(bash.paths[2])
                + f"builtin printf '\\n{marker} %s\\n' 0\n")
        if not bash.send(line):
            return None
        status, _ = bash.wait_marker(marker, _STATE_TIMEOUT)
        return bash.files.state_text() if status is not None else None

    def _read(self, fd: int) -> str:
        return _capture.head_and_tail(fd, self._output_limit)

    def _restart(self) -> None:
        bash, self._bash = self._bash, None
        if bash is not None:
            bash.kill_children()
            bash.close()
        self._start()

    def close(self) -> None:
        """Stop bash and everything it started; remove the scratch folder."""
        self._closed = True  # a command ending in another thread starts no bash after this
        bash, self._bash = self._bash, None  # and a stop there may clear it too
        if bash is not None:
            bash.kill_children()
            bash.close()
        if self._dir is not None:
            shutil.rmtree(self._dir, ignore_errors=True)
        if self._own_tmp is not None:
            shutil.rmtree(self._own_tmp, ignore_errors=True)


def _one_shot_running(proc: subprocess.Popen[bytes]) -> str | None:
    """What a read-only run's bash (pid 2 of its sandbox) runs now."""
    return _running(sandboxed_pid(proc.pid, live_processes()))
