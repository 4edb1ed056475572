"""What a benchmark's header says of where it ran: the processor and the commit."""

from __future__ import annotations

import contextlib
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def processor() -> str:
    """The processor's model name (``/proc/cpuinfo``), else what ``platform`` knows."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.partition(":")[2].strip()
    return platform.processor() or platform.machine()


def commit() -> str:
    """The checkout's commit, ``-dirty`` when it has changes ("" outside a git checkout)."""
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        return subprocess.run(["git", "-C", str(ROOT), "describe", "--always", "--dirty"],
                              capture_output=True, text=True, timeout=10).stdout.strip()
    return ""
