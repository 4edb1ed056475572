"""The parent side of the python tool: a persistent interpreter in a subprocess.

State lives in the child, so a crash or a hung extension cannot take fencecall down. On
timeout the child gets SIGINT (a KeyboardInterrupt in the running code, which keeps the
namespace); if it does not stop, it is killed and restarted, and the result says so.
Functions registered by tools are stubs in the child that call back into this process.

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
import fcntl
import itertools
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from .processes import (
    StartGate,
    kill_group,
    live_processes,
    readable,
    sandboxed_pid,
    start_process,
)
from .sandbox import Sandbox, SandboxPolicy

DRIVER = Path(__file__).with_name("python_driver.py")
_INTERRUPT_GRACE = 2.0


@dataclass(frozen=True, slots=True)
class PythonResult:
    stdout: str
    stderr: str
    result: str | None
    error: str | None
    timed_out: bool = False
    restarted: str | None = None


class PythonSession:
    """One interpreter subprocess with a namespace that persists between :meth:`run` calls."""

    def __init__(self, cwd: Path, functions: Mapping[str, Callable[..., Any]] | None = None,
                 env: Mapping[str, str] | None = None, sandbox: Sandbox | None = None):
        self._cwd = cwd
        self._env = dict(env) if env is not None else None
        self._functions = dict(functions or {})
        self._sandbox = sandbox or Sandbox(SandboxPolicy.OFF)
        self._out, self._err = _output_file(), _output_file()
        self._ids = itertools.count(1)
        self._proc: subprocess.Popen[bytes] | None = None
        self._gate = StartGate("python session")
        self._start()

    def _start(self) -> None:
        self._proc = self._gate.start(self._spawn)
        self._pending = b""
        self._interpreter_pid: int | None = None
        if self._functions:
            self._send({"op": "functions", "names": sorted(self._functions)})

    def _spawn(self) -> subprocess.Popen[bytes]:
        request_read, self._request_fd = os.pipe()
        self._reply_fd, reply_write = os.pipe()
        argv = self._sandbox.command(
            [sys.executable, "-P", "-u", str(DRIVER), str(request_read), str(reply_write)],
            cwd=self._cwd)
        try:
            return start_process(
                argv, stdin=subprocess.DEVNULL,
                stdout=self._out, stderr=self._err, cwd=self._cwd,
                pass_fds=(request_read, reply_write, *self._sandbox.pass_fds),
                start_new_session=True, env=self._env)
        finally:
            os.close(request_read)
            os.close(reply_write)

    def abort(self) -> None:
        """Kill the interpreter, from any thread, and never start it again: the code running
        ends, and later calls fail (a batch task's stop)."""
        self._gate.abort()

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def _send(self, message: dict[str, Any]) -> None:
        os.write(self._request_fd, (json.dumps(message) + "\n").encode())

    def _receive(self, deadline: float) -> dict[str, Any] | None:
        """The next reply, or None at the deadline or if the child died."""
        while b"\n" not in self._pending:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return None
            if readable(self._reply_fd, remaining):
                chunk = os.read(self._reply_fd, 65536)
                if not chunk:
                    return None
                self._pending += chunk
        line, _, self._pending = self._pending.partition(b"\n")
        reply: dict[str, Any] = json.loads(line)
        return reply

    def run(self, code: str, timeout: float = 60.0) -> PythonResult:
        restarted = None
        if not self.alive():
            restarted = "the previous interpreter had exited; its variables are gone"
            self._restart()
        request_id = next(self._ids)
        self._send({"op": "exec", "id": request_id, "code": code})
        try:
            reply = self._await(request_id, time.monotonic() + timeout)
            timed_out = reply is None and self.alive()
            if timed_out:
                self._interrupt()
                reply = self._await(request_id, time.monotonic() + _INTERRUPT_GRACE)
        except KeyboardInterrupt:
            self._interrupt()
            self._await(request_id, time.monotonic() + _INTERRUPT_GRACE)
            raise
        stdout, stderr = self._take_output()
        if reply is None:
            why = "it did not stop on timeout" if timed_out else "it exited"
            self._restart()
            return PythonResult(stdout, stderr, None, None, timed_out,
                                f"{why}; its variables are gone")
        return PythonResult(stdout, stderr, reply.get("result"), reply.get("error"), timed_out,
                            restarted)

    def _await(self, request_id: int, deadline: float) -> dict[str, Any] | None:
        while (reply := self._receive(deadline)) is not None:
            if reply["op"] == "call":
                self._answer(reply)
            elif reply.get("id") == request_id:
                return reply
        return None

    def _answer(self, call: dict[str, Any]) -> None:
        fn = self._functions.get(call["name"])
        try:
            if fn is None:
                raise NameError(f"no function {call['name']!r}")
            value = fn(*call.get("args", ()), **call.get("kwargs", {}))
        except Exception as err:
            self._send({"op": "raise", "error": f"{type(err).__name__}: {err}"})
            return
        try:
            json.dumps(value)
        except (TypeError, ValueError):
            value = repr(value)
        self._send({"op": "return", "value": value})

    def _interrupt(self) -> None:
        pid = self._interpreter()
        if pid is not None and self.alive():
            with contextlib.suppress(ProcessLookupError):  # it may have died just now
                os.kill(pid, signal.SIGINT)

    def _interpreter(self) -> int | None:
        """The interpreter's pid: the process we started, or the one bwrap started (bwrap
        passes no signals on)."""
        if self._proc is None or not self._sandbox.enforced:
            return None if self._proc is None else self._proc.pid
        if self._interpreter_pid is None:
            self._interpreter_pid = sandboxed_pid(self._proc.pid, live_processes())
        return self._interpreter_pid

    def _take_output(self) -> tuple[str, str]:
        texts = []
        for handle in (self._out, self._err):
            handle.seek(0)
            texts.append(handle.read().decode("utf-8", errors="replace"))
            handle.truncate(0)
        return texts[0], texts[1]

    def _restart(self) -> None:
        self._stop()
        self._start()

    def _stop(self) -> None:
        proc = self._proc
        if proc is None:
            return
        kill_group(proc)
        os.close(self._request_fd)
        os.close(self._reply_fd)
        self._proc = None

    def close(self) -> None:
        self._stop()
        self._out.close()
        self._err.close()


def _output_file() -> IO[bytes]:
    """An unnamed file the child appends to: in append mode its writes land at the end even
    after we read from the start and truncate it."""
    handle = tempfile.TemporaryFile()  # noqa: SIM115 (open as long as the session)
    flags = fcntl.fcntl(handle.fileno(), fcntl.F_GETFL)
    fcntl.fcntl(handle.fileno(), fcntl.F_SETFL, flags | os.O_APPEND)
    return handle
