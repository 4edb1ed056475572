"""Finding a container's processes among the host's.

A local container's processes are host processes in a pid namespace of their own: the host
sees them in ``/proc`` under host pids, and ``NSpid`` in their status gives the pid they have
inside. Killing by host pid needs no ``exec`` into the container (which a stuck container
would not answer) and reaches a process whatever it does to its session or group.
"""

from __future__ import annotations

import contextlib
import os
import signal


class PidNamespace:
    """The pid namespace of the process ``init`` (a container's pid 1, by host pid)."""

    def __init__(self, init: int):
        self.init = init
        self._link = os.readlink(f"/proc/{init}/ns/pid")

    def members(self) -> list[int]:
        """The host pids of the namespace's processes."""
        found = []
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError):
                    if os.readlink(f"/proc/{name}/ns/pid") == self._link:
                        found.append(int(name))
        return found

    def host_pid(self, inner: int) -> int | None:
        """The host pid of the process called ``inner`` inside."""
        for pid in self.members():
            if _inner_pid(pid) == inner:
                return pid
        return None

    def carrying(self, setting: bytes) -> list[int]:
        """The host pids of the namespace's processes whose environment holds ``setting``
        (``NAME=value``), which every process started below one that had it inherits."""
        found = []
        for pid in self.members():
            with contextlib.suppress(OSError), open(f"/proc/{pid}/environ", "rb") as file:
                if setting in file.read(1 << 18).split(b"\0"):
                    found.append(pid)
        return found


def parent(pid: int) -> int | None:
    """The host pid of ``pid``'s parent; None where it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as file:
            stat = file.read()
    except OSError:
        return None
    return int(stat[stat.rfind(b")") + 2 :].split()[1])


def stop_and_kill(pids: list[int]) -> None:
    """SIGSTOP every one of ``pids``, then SIGKILL them: none runs on meanwhile."""
    for signum in (signal.SIGSTOP, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signum)


def _inner_pid(pid: int) -> int | None:
    """The pid ``pid`` has in its own (innermost) pid namespace."""
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as file:
            for line in file:
                if line.startswith("NSpid:"):
                    return int(line.split()[-1])
    except (OSError, ValueError):
        return None
    return None
