"""The parent side of the python tool: a persistent interpreter in a subprocess.

State lives in the child, so a crash or a hung extension cannot take fencecall down.
Functions registered by tools are stubs in the child that call back into this process.

A timeout, Ctrl-C or an output flood stops the whole block: the interpreter gets
:data:`STOP_SIGNAL`, on which the driver raises KeyboardInterrupt and keeps raising it until
the block returns (see ``python_driver``), so code that catches it makes no further call;
every process below the interpreter is killed, and the signal is repeated until the driver
answers. If it answers within a grace period and none of the code's threads runs on, the
namespace is kept; otherwise the interpreter is killed and restarted, and the result says so.
The driver's handler acknowledges the signal at once; code that blocked or ignored it, or put
its own handler in its place, sends no acknowledgement, so unless one comes within
:data:`_ACK_WITHIN` (or if the signal is seen ignored, or blocked once acknowledged), the
interpreter is frozen (SIGSTOP) there and then, and killed and restarted: such code gets no
grace to run on in. Code stuck that long in a call that does not return to Python loses its
variables that way too, as it would at the end of the grace.
SIGINT is not used: ``os.system`` ignores it while its command runs. Every process the code starts
stays below the process fencecall started, orphans too: unsandboxed, the interpreter runs
under a reaper (which also kills them all when fencecall dies); sandboxed, under bwrap's init.

What comes back is bounded. stdout and stderr are files whose size is watched while the code
runs (past the disk limit the code is stopped) and which are read head and tail. A reply
longer than :data:`REPLY_LIMIT`, or a line that is no message, means the code wrote to the
reply pipe itself: the interpreter is restarted.

With an enforced :class:`Sandbox` the interpreter runs inside bwrap and shares no folder with
fencecall: it talks over two pipes, and its stdout and stderr are unnamed temporary files that
fencecall holds open, so there is no path inside that could be swapped for a symlink.

The driver runs with ``-P``, so no folder is put first on ``sys.path``: neither the cwd (the
workspace, where the model could plant a ``json.py``) nor the driver's own folder, whose
fencecall modules (``sandbox``, ``files``, ``processes``...) would shadow packages of those
names in the model's imports.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ...environments import Environment
from ...sandbox import (
    Sandbox,
    SandboxPolicy,
    StartGate,
    freeze_and_kill,
    kill_group,
    kill_tree,
    live_processes,
    readable,
    reaped,
    sandboxed_pid,
    start_process,
)
from ...sandbox.scratch import PREFIX
from . import _capture
from . import _in_environment as in_environment
from .output import DEFAULT_LIMIT, joined

DRIVER = Path(__file__).with_name("python_driver.py")
STOP_SIGNAL = signal.SIGUSR2
REPLY_LIMIT = 4 * 1024 * 1024
"""Bytes of one message from the interpreter; the code cannot make fencecall hold more."""
_GRACE = 2.0
"""Seconds the code has to stop before the interpreter is killed."""
_ACK_WITHIN = 0.1
"""Seconds the driver's stop handler has to acknowledge the signal before the interpreter is
frozen and killed: without it, the handler did not run, and the code runs on unchecked."""
_RESIGNAL_EVERY = 0.1
_WATCH_EVERY = 0.25
_KILL_FOR = 2.0
_GONE = "its variables are gone"

_Why = Literal["reply", "timeout", "overflow", "dead", "garbled"]
_Reply = dict[str, Any]


@dataclass(frozen=True, slots=True)
class PythonResult:
    stdout: str
    stderr: str
    result: str | None
    error: str | None
    timed_out: bool = False
    restarted: str | None = None
    overflowed: bool = False
    """The code wrote more than the disk limit of output and was stopped."""
    killed: int = 0
    """Processes the code had started that its stop killed."""


class PythonSession:
    """One interpreter subprocess with a namespace that persists between :meth:`run` calls.
    Output is cut to ``output_limit`` characters (bytes for stdout and stderr), head and
    tail; code that writes more than ``disk_limit`` bytes of it (default: the sandbox's
    ``limits.output``) is stopped. With an ``environment`` the interpreter runs there (see
    :mod:`._in_environment`) with only the variables of ``env``, and ``cwd`` and
    ``sandbox`` are not used."""

    def __init__(self, cwd: Path, functions: Mapping[str, Callable[..., Any]] | None = None,
                 env: Mapping[str, str] | None = None, sandbox: Sandbox | None = None, *,
                 output_limit: int = DEFAULT_LIMIT, disk_limit: int | None = None,
                 environment: Environment | None = None):
        self._cwd = cwd
        self._place = environment
        self._init: int | None = None
        """In an environment: the host pid of the init the interpreter runs under."""
        self._env = dict(env) if env is not None else None
        self._functions = dict(functions or {})
        self._sandbox = sandbox or Sandbox(SandboxPolicy.OFF)
        self._output_limit = output_limit
        self._disk_limit = self._sandbox.limits.output if disk_limit is None else disk_limit
        self._out, self._err = _capture.unnamed_file(), _capture.unnamed_file()
        self._ids = itertools.count(1)
        self._proc: subprocess.Popen[bytes] | None = None
        self._lost: str | None = None
        """Why the interpreter was killed after a Ctrl-C, for the next result to say."""
        self._gate = StartGate("python session")
        self._start()

    def _start(self) -> None:
        self._proc = self._gate.start(self._spawn)
        self._pending = bytearray()
        self._acked = False
        """Whether the driver's stop handler acknowledged the stop under way."""
        self._interpreter_pid: int | None = None
        self._own: frozenset[int] = frozenset()
        """The processes below ours that a stop spares: the interpreter, and bwrap's init."""
        if self._functions:
            self._send({"op": "functions", "names": sorted(self._functions)})

    def _spawn(self) -> subprocess.Popen[bytes]:
        pipe = os.pipe if self._place is None else self._place.pipe
        request_read, self._request_fd = pipe()
        try:
            self._reply_fd, reply_write = pipe()
        except BaseException:  # an environment's pipe can fail (see environments._handoff)
            _capture.close(request_read, self._request_fd)
            raise
        if self._place is not None:
            # new files: an unnamed file can be handed into a container once (it is linked
            # there, which the kernel allows a file made unnamed only once)
            _capture.close(self._out, self._err)
            self._out, self._err = _capture.unnamed_file(), _capture.unnamed_file()
            try:
                return in_environment.spawn_python(self._place, [
                    "python3", "-P", "-u", in_environment.driver_path(self._place, DRIVER),
                    "3", "4", str(int(STOP_SIGNAL)), str(REPLY_LIMIT)],
                    (request_read, reply_write, self._out, self._err), self._env)
            finally:
                os.close(request_read)
                os.close(reply_write)
        command = [sys.executable, "-P", "-u", str(DRIVER), str(request_read),
                   str(reply_write), str(int(STOP_SIGNAL)), str(REPLY_LIMIT)]
        if self._sandbox.enforced:
            argv = self._sandbox.command(command, cwd=self._cwd)
        else:
            argv = reaped(command, owner=f"{PREFIX}python-{os.getpid()}-{id(self):x}")
        try:
            return start_process(
                argv, stdin=subprocess.DEVNULL,
                stdout=self._out, stderr=self._err, cwd=self._cwd,
                pass_fds=(request_read, reply_write, *self._sandbox.pass_fds),
                start_new_session=True, env=self._env, limits=self._sandbox.limits,
                reaper=not self._sandbox.enforced)
        finally:
            os.close(request_read)
            os.close(reply_write)

    def abort(self) -> None:
        """Kill the interpreter, from any thread, and never start it again: the code running
        ends, and later calls fail (a batch task's stop)."""
        proc = self._proc
        if proc is not None and proc.poll() is None:
            self._kill_all(proc)  # first: once the reaper is killed, its orphans go to init
        self._gate.abort()

    def _root(self, proc: subprocess.Popen[bytes]) -> int:
        """The process every one of the interpreter's is below."""
        return proc.pid if self._init is None else self._init

    def _kill_all(self, proc: subprocess.Popen[bytes]) -> None:
        """Kill the interpreter and all below it (in an environment: its init stopped
        first, which would exit with the interpreter and let the others go)."""
        if self._init is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._init, signal.SIGSTOP)
        kill_tree(self._root(proc))
        if self._init is not None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._init, signal.SIGKILL)

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._request_fd, (json.dumps(message) + "\n").encode())

    def run(self, code: str, timeout: float = 60.0) -> PythonResult:
        """Run ``code``; stop it after ``timeout`` seconds. On Ctrl-C the code is stopped
        too, and the KeyboardInterrupt goes on to the caller."""
        restarted = self._revive()
        request_id = next(self._ids)
        self._send({"op": "exec", "id": request_id, "code": code, "limit": self._output_limit})
        try:
            reply, why = self._await(request_id, time.monotonic() + timeout, watch=True)
            killed, refused = 0, None
            if why in ("timeout", "overflow"):
                reply, killed, refused = self._halt(request_id)
        except KeyboardInterrupt:
            self._interrupted(request_id)
            raise
        lost = refused or self._why_lost(why, reply)
        if lost is not None:
            self._stop()
            restarted = f"{lost}; {_GONE}"
        stdout, stderr = self._take_output()
        if lost is not None:
            self._start()
        reply = reply or {}
        return PythonResult(stdout, stderr, _text(reply.get("result")),
                            _text(reply.get("error")), why == "timeout", restarted,
                            why == "overflow", killed)

    def _revive(self) -> str | None:
        """Start a new interpreter if the last one is gone; why, for the result."""
        if self.alive():
            return None
        lost, self._lost = self._lost or "the previous interpreter had exited", None
        self._restart()
        return f"{lost}; {_GONE}"

    @staticmethod
    def _why_lost(why: _Why, reply: _Reply | None) -> str | None:
        """Why the interpreter must be restarted after a run that ended for ``why``; None
        when it can go on."""
        if why == "garbled":
            return ("something other than its messages came on its reply pipe (the code wrote "
                    f"there, or more than {REPLY_LIMIT // 2**20} MiB at once)")
        if why == "dead":
            return "it exited"
        if reply is None:
            return f"it did not stop within {_GRACE:g} s"
        if why != "reply" and reply.get("threads"):
            return "threads the code started were still running"
        return None

    def _interrupted(self, request_id: int) -> None:
        """Ctrl-C: stop the code as a timeout does, and drop its output. What cannot go on is
        killed now (a second Ctrl-C while stopping, too) and restarted by the next run."""
        lost: str | None = "Ctrl-C came again while it was being stopped"
        try:
            reply, _, refused = self._halt(request_id)
            lost = refused or self._why_lost("timeout", reply)
        finally:
            self._take_output()
            if lost is not None:
                self._lost = lost
                self._stop()

    def _await(self, request_id: int, deadline: float,
               watch: bool = False) -> tuple[_Reply | None, _Why]:
        """The ``done`` reply to ``request_id`` and "reply", or None and why not; the calls of
        stubs are answered meanwhile. With ``watch``, the output files' size is checked."""
        while True:
            reply, why = self._receive(deadline, watch)
            if reply is None:
                return None, why
            if reply.get("op") == "call":
                self._answer(reply)
            elif reply.get("op") == "ready":
                self._learn(reply)
            elif reply.get("op") == "stopping" and reply.get("id") == request_id:
                self._acked = True
            elif reply.get("op") == "done" and reply.get("id") == request_id:
                return reply, "reply"

    def _receive(self, deadline: float, watch: bool) -> tuple[_Reply | None, _Why]:
        """The next message, or None and why there is none: the deadline passed, the output
        grew past the disk limit (with ``watch``), the child died or wrote a line that is no
        message (over :data:`REPLY_LIMIT` bytes, which are all that is ever held)."""
        while (end := self._pending.find(b"\n")) == -1:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None, "timeout"
            if watch and self._disk_limit and \
                    _capture.on_disk(self._out, self._err) >= self._disk_limit:
                return None, "overflow"
            if len(self._pending) > REPLY_LIMIT:
                return None, "garbled"
            if readable(self._reply_fd, min(remaining, _WATCH_EVERY)):
                chunk = os.read(self._reply_fd,
                                min(65536, REPLY_LIMIT + 1 - len(self._pending)))
                if not chunk:
                    return None, "dead"
                self._pending += chunk
        line = bytes(self._pending[:end])
        del self._pending[: end + 1]
        try:
            reply = json.loads(line)
        except ValueError:
            return None, "garbled"
        return (reply, "reply") if isinstance(reply, dict) else (None, "garbled")

    def _answer(self, call: _Reply) -> None:
        fn = self._functions.get(call.get("name", ""))
        try:
            if fn is None:
                raise NameError(f"no function {call.get('name')!r}")
            value = fn(*call.get("args", ()), **call.get("kwargs", {}))
        except Exception as err:
            self._send({"op": "raise", "error": f"{type(err).__name__}: {err}"})
            return
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        self._send({"op": "return", "value": value})

    def _learn(self, ready: _Reply) -> None:
        """The interpreter's pid from its first message, unsandboxed (inside bwrap it is its
        pid namespace's, not the host's: :meth:`_interpreter` finds that one)."""
        pid = ready.get("pid")
        if self._place is not None and self._interpreter_pid is None and isinstance(pid, int):
            found = self._place.host_pids(pid)  # the interpreter's, and its init's
            if found is not None:
                (self._interpreter_pid, self._init), self._own = found, frozenset(found[:1])
        elif not self._sandbox.enforced and self._interpreter_pid is None and \
                isinstance(pid, int):
            self._interpreter_pid, self._own = pid, frozenset({pid})

    def _interpreter(self) -> int | None:
        """The interpreter's host pid, None while it is not known. Sandboxed, it is the one
        bwrap's init started (bwrap passes no signals on), and the init is spared too."""
        if self._interpreter_pid is None and self._proc is not None and self._sandbox.enforced:
            table = live_processes()
            pid = sandboxed_pid(self._proc.pid, table)
            init = next((info.ppid for info in table if info.pid == pid), None)
            if pid is not None and init is not None:
                self._interpreter_pid, self._own = pid, frozenset({pid, init})
        return self._interpreter_pid

    def _halt(self, request_id: int) -> tuple[_Reply | None, int, str | None]:
        """Stop the running code: send :data:`STOP_SIGNAL` and kill every process the code
        started, again every :data:`_RESIGNAL_EVERY` seconds until the driver answers or
        the grace ends; (its reply or None, how many processes were killed, and why the
        interpreter was frozen instead, when its code refused the signal: see
        :meth:`_refused`)."""
        killed: set[int] = set()
        self._acked = False
        deadline = time.monotonic() + _GRACE
        ack_by: float | None = None
        while (left := deadline - time.monotonic()) > 0:
            pid = self._interpreter()
            if pid is not None:
                with contextlib.suppress(ProcessLookupError):  # it may have died just now
                    os.kill(pid, STOP_SIGNAL)
                killed |= self._kill_processes()
                ack_by = ack_by or time.monotonic() + _ACK_WITHIN  # once its children died
                if (refused := self._refused(pid, ack_by)) is not None:
                    return None, len(killed | self._freeze(pid)), refused
            reply, why = self._await(request_id, time.monotonic() + min(left, _RESIGNAL_EVERY))
            if why == "reply":
                end = time.monotonic() + _KILL_FOR  # those started before the stop took hold
                while (more := self._kill_processes()) and time.monotonic() < end:
                    killed |= more
                    time.sleep(0.01)
                return reply, len(killed), None
            if why != "timeout":
                break
        return None, len(killed), None

    def _refused(self, pid: int, ack_by: float) -> str | None:
        """Why the interpreter ``pid`` is to be frozen now rather than given the grace, None
        while it may be stopping: its code ignores the stop signal; or its handler did not
        acknowledge it by ``ack_by`` (blocked, or replaced, or the code is stuck in a call
        that does not return to Python); or it is blocked although acknowledged (an
        acknowledgement the code wrote itself: after a real one, the code makes no call)."""
        held = _signal_held(pid)
        if held == "ignored" or (held is not None and self._acked):
            return f"the code {held} the signal that stops it"
        if self._acked or time.monotonic() < ack_by:
            return None
        if held is not None:
            return f"the code {held} the signal that stops it"
        return (f"the signal that stops the code was not taken within {_ACK_WITHIN:g} s: the "
                "code replaced its handler, or was stuck in a call")

    def _freeze(self, pid: int) -> set[int]:
        """Freeze the interpreter ``pid`` (SIGSTOP, which no code can block: its host pid,
        never bwrap's init), so that it runs no further until it is killed and restarted,
        and kill what it started; the processes killed."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGSTOP)
        return self._kill_processes()

    def _kill_processes(self) -> set[int]:
        """SIGKILL every live process the code started: all below the one we started (where
        orphans are adopted) but the interpreter and bwrap's init; none while the interpreter
        is not known. Each is stopped first, and the tree read again until no new one
        appears, so that none reacts to another's death (a shell running the rest of its
        line once its ``sleep`` is killed) or starts one more meanwhile."""
        if self._proc is None or not self._own or self._proc.poll() is not None:
            return set()
        return freeze_and_kill(self._root(self._proc), self._own)

    def _take_output(self) -> tuple[str, str]:
        """What the code wrote since the last call, head and tail; the files are emptied."""
        texts = [_capture.head_and_tail(fd, self._output_limit) for fd in (self._out, self._err)]
        _capture.clear(self._out, self._err)
        return texts[0], texts[1]

    def _restart(self) -> None:
        self._stop()
        self._start()

    def _stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        if proc.poll() is None:
            self._kill_all(proc)  # first: once the reaper is killed, its orphans go to init
        kill_group(proc)
        self._init = None
        os.close(self._request_fd)
        os.close(self._reply_fd)
        self._proc = None

    def close(self) -> None:
        self._stop()
        _capture.close(self._out, self._err)


def _signal_held(pid: int) -> Literal["ignored", "had blocked"] | None:
    """Whether the process ``pid`` ignores :data:`STOP_SIGNAL`, or its main thread (the one the
    signal goes to, and which runs Python's handlers) blocks it, from ``/proc``; None when it
    does neither or it cannot be told."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    masks = dict(line.split(":\t", 1) for line in status.splitlines() if ":\t" in line)
    bit = 1 << (int(STOP_SIGNAL) - 1)
    try:
        if int(masks.get("SigIgn", "0"), 16) & bit:
            return "ignored"
        if int(masks.get("SigBlk", "0"), 16) & bit:
            return "had blocked"
    except ValueError:
        return None
    return None


def _text(value: object) -> str | None:
    """A text from the driver: a string, or ``[head, characters cut, tail]``."""
    if isinstance(value, list) and len(value) == 3 and isinstance(value[1], int):
        return joined(str(value[0]), value[1], str(value[2]))
    return value if isinstance(value, str) else None
