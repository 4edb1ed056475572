"""Running one hook command: its own process group, a time limit, capped output.

A hook is the user's command, so it runs on the host (not in the sandbox), but it must not
hang fencecall, fill its memory or outlive its turn: it gets a time limit after which its
whole process group is killed, at most :data:`OUTPUT_CAP` bytes of each of stdout and stderr
are kept (the rest is read and dropped, so the hook never blocks on a full pipe), and Ctrl-C
kills it too. What it left running in its group is killed as it exits.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

OUTPUT_CAP = 64 * 1024
"""Bytes kept of a hook's stdout, and of its stderr."""
_CHUNK = 16 * 1024


@dataclass(frozen=True, slots=True)
class Finished:
    """How a hook's process ended: its exit status (None: killed at its time limit), and
    what it wrote (cut at :data:`OUTPUT_CAP` bytes each)."""

    exit_code: int | None
    stdout: str
    stderr: str


def run_hook(argv: Sequence[str], stdin: bytes, *, cwd: Path, env: Mapping[str, str],
             timeout: float) -> Finished:
    """Run ``argv`` with ``stdin`` as its input; raises :class:`OSError` where it cannot
    start. A KeyboardInterrupt while it runs kills it and goes on up."""
    proc = subprocess.Popen(argv, cwd=cwd, env=dict(env), stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    out, err = _Capped(proc.stdout), _Capped(proc.stderr)
    threads = [threading.Thread(target=_feed, args=(proc.stdin, stdin), daemon=True),
               threading.Thread(target=out.drain, daemon=True),
               threading.Thread(target=err.drain, daemon=True)]
    for thread in threads:
        thread.start()
    exit_code: int | None = None
    try:
        exit_code = proc.wait(timeout)
    except subprocess.TimeoutExpired:
        pass
    finally:  # the group goes in every case: a timeout, Ctrl-C, or leftovers of a hook
        _kill_group(proc)
    for thread in threads:
        thread.join(1.0)
    return Finished(exit_code, out.text(), err.text())


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()


def _feed(pipe: IO[bytes], data: bytes) -> None:
    """Write the hook's input; a hook that does not read it is fine."""
    with contextlib.suppress(OSError), pipe:
        pipe.write(data)


class _Capped:
    """Reads a pipe to its end, keeping its first :data:`OUTPUT_CAP` bytes."""

    def __init__(self, pipe: IO[bytes]) -> None:
        self._pipe = pipe
        self._kept = bytearray()

    def drain(self) -> None:
        with contextlib.suppress(OSError, ValueError), self._pipe:
            while chunk := os.read(self._pipe.fileno(), _CHUNK):
                self._kept += chunk[: max(0, OUTPUT_CAP - len(self._kept))]

    def text(self) -> str:
        return bytes(self._kept).decode(errors="replace")
