"""Scratch folders that name the process they belong to, so the ones a killed fencecall left
behind (``kill -9`` runs no cleanup) are found and removed by the next one."""

from __future__ import annotations

import contextlib
import functools
import os
import re
import shutil
import tempfile
import time
from pathlib import Path

PREFIX = "fencecall-"
_OWNED = re.compile(rf"{PREFIX}[a-z]+-(?P<pid>\d+)-")
GRACE = 60.0
"""Seconds a folder of a dead process is left alone (a pid can be reused quickly)."""


def make_scratch(kind: str) -> Path:
    """A new private folder, ``fencecall-KIND-PID-…`` in the temporary directory."""
    return Path(tempfile.mkdtemp(prefix=f"{PREFIX}{kind}-{os.getpid()}-"))


def process_alive(pid: int) -> bool:
    """Whether ``pid`` runs (a process of another user counts)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale(base: Path | None = None) -> list[Path]:
    """Remove the scratch folders of processes that no longer run; returns them."""
    base = Path(tempfile.gettempdir()) if base is None else base
    removed = []
    now = time.time()
    for path in base.glob(f"{PREFIX}*"):
        match = _OWNED.match(path.name)
        if match is None or process_alive(int(match.group("pid"))):
            continue
        with contextlib.suppress(OSError):
            if path.is_dir() and not path.is_symlink() and now - path.lstat().st_mtime > GRACE:
                shutil.rmtree(path)
                removed.append(path)
    return removed


@functools.cache
def remove_stale_once() -> None:
    """:func:`remove_stale`, once per process (at the first session)."""
    remove_stale()
