"""Whether a process the tests started is still running, read from ``/proc``."""

from __future__ import annotations

import os
from pathlib import Path


def alive(pid: int) -> bool:
    """A zombie counts as ended, and so does a process reaped while it is being looked at."""
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:  # ProcessLookupError, FileNotFoundError
        return False
    return state != "Z"


def running(marker: str) -> list[int]:
    """The processes whose command line holds ``marker`` (a distinctive argument)."""
    found = []
    for entry in Path("/proc").iterdir():
        try:
            if entry.name.isdigit() and marker in (entry / "cmdline").read_bytes().decode(
                    errors="replace"):
                found.append(int(entry.name))
        except OSError:
            continue
    return found
