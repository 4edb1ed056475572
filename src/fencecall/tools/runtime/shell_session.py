"""A persistent bash process that runs one command at a time.

Each command is written to a file and sourced by the same bash, so ``cd`` and ``export``
persist between calls. Its stdout and stderr go to their own files and its stdin is
``/dev/null`` (a command waiting for input gets end-of-file instead of hanging the session).
bash runs in a session of its own; on timeout every process of that session but bash itself
is killed (TERM, then KILL), which takes down whole pipelines and their children. If bash
itself is stuck (a builtin loop) or dies (``exit``), it is restarted and the result says so.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import select
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

from .processes import kill_group

_KILL_GRACE = 0.5


@dataclass(frozen=True, slots=True)
class ShellResult:
    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool = False
    restarted: str | None = None
    """Why the shell had to be restarted (cwd and variables were reset), if it was."""


def _session_members(sid: int) -> list[int]:
    """Live PIDs in session ``sid``, zombies left out (Linux /proc; elsewhere ``ps``)."""
    members = []
    proc = Path("/proc")
    if proc.is_dir():
        for entry in proc.iterdir():
            if not entry.name.isdigit():
                continue
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            fields = stat[stat.rfind(")") + 2 :].split()
            if len(fields) > 3 and int(fields[3]) == sid and fields[0] != "Z":
                members.append(int(entry.name))
        return members
    out = subprocess.run(["ps", "-A", "-o", "pid=,sess=,stat="], capture_output=True,
                         text=True)
    for line in out.stdout.splitlines():
        pid, sess, stat = ([*line.split(), "", "", ""])[:3]
        if sess == str(sid) and not stat.startswith("Z"):
            members.append(int(pid))
    return members


class ShellSession:
    """One bash process; :meth:`run` executes a command in it."""

    def __init__(self, cwd: Path, *, env: dict[str, str] | None = None,
                 output_limit: int = 1_000_000):
        self._cwd = cwd
        self._env = env
        self._output_limit = output_limit
        self._dir = Path(tempfile.mkdtemp(prefix="fencecall-shell-"))
        self._proc: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._start()

    def _start(self) -> None:
        env = dict(os.environ if self._env is None else self._env)
        env.setdefault("PAGER", "cat")
        env.setdefault("GIT_PAGER", "cat")
        env["TERM"] = "dumb"
        self._proc = subprocess.Popen(
            ["bash", "--noprofile", "--norc"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, cwd=self._cwd, env=env, start_new_session=True)
        self._buffer = b""

    @property
    def pid(self) -> int:
        assert self._proc is not None
        return self._proc.pid

    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def run(self, command: str, timeout: float = 60.0) -> ShellResult:
        """Run ``command``; wait at most ``timeout`` seconds."""
        restarted = None
        if not self.alive():
            restarted = "the previous shell had exited"
            self._start()
        proc = self._proc
        assert proc is not None and proc.stdin is not None
        script, out, err = self._dir / "cmd.sh", self._dir / "out", self._dir / "err"
        script.write_text(command + "\n")
        marker = secrets.token_hex(8)
        line = (f"source {script} >{out} 2>{err} </dev/null; "
                f"printf '\\n{marker} %s\\n' \"$?\"\n")
        try:
            proc.stdin.write(line.encode())
            proc.stdin.flush()
        except BrokenPipeError:
            self._start()
            return self.run(command, timeout)
        try:
            status, timed_out = self._wait_marker(marker, timeout)
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
        return ShellResult(self._read(out), self._read(err), None if timed_out else status,
                           timed_out, restarted)

    def _wait_marker(self, marker: str, timeout: float) -> tuple[int | None, bool]:
        """(exit status, timed out?) once bash prints the marker; status None if it died."""
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
            ready, _, _ = select.select([fd], [], [], remaining)
            if ready:
                chunk = os.read(fd, 65536)
                if not chunk:
                    return None, False
                self._buffer += chunk

    def _kill_children(self) -> None:
        """TERM every process of the shell's session but bash, then KILL what is left."""
        sid = self.pid
        for sig in (signal.SIGTERM, signal.SIGKILL):
            deadline = time.monotonic() + _KILL_GRACE
            victims = self._children(sid)
            for pid in victims:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, sig)
            while victims and time.monotonic() < deadline:
                time.sleep(0.01)
                victims = self._children(sid)
            if not victims:
                return

    @staticmethod
    def _children(sid: int) -> list[int]:
        return [pid for pid in _session_members(sid) if pid != sid]

    def _read(self, path: Path) -> str:
        """The file's text, keeping its head and tail when it exceeds the output limit."""
        try:
            size = path.stat().st_size
        except FileNotFoundError:
            return ""
        half = self._output_limit // 2
        with path.open("rb") as handle:
            if size <= 2 * half:
                return handle.read().decode("utf-8", errors="replace")
            head = handle.read(half).decode("utf-8", errors="replace")
            handle.seek(size - half)
            tail = handle.read().decode("utf-8", errors="replace")
        cut = size - 2 * half
        return f"{head}\n[... {cut} bytes cut ...]\n{tail}"

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
                stream.close()
        self._proc = None

    def close(self) -> None:
        """Stop bash and everything it started; remove the scratch folder."""
        self._terminate()
        for name in ("cmd.sh", "out", "err"):
            (self._dir / name).unlink(missing_ok=True)
        self._dir.rmdir()
