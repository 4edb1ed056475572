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
