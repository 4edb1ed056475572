"""The real path of a file or folder, as the kernel resolves it.

``Path.resolve`` walks a path one ``lstat`` per folder in Python, 60 µs for a workspace six
folders deep; a batch task resolves its folders a dozen times (the workspace, its roots, the
home they must stay apart from, the sandbox's binds). Opening the path with ``O_PATH`` and
reading back ``/proc/self/fd/N`` gets the same answer from the kernel in three system calls.
"""

from __future__ import annotations

import os
from pathlib import Path

_OPEN_FLAGS = getattr(os, "O_PATH", 0) | os.O_CLOEXEC
_KERNEL_WAY = hasattr(os, "O_PATH") and os.path.isdir("/proc/self/fd")


def real_path(path: Path) -> Path:
    """``path.resolve()``: absolute, every link followed. A path that does not exist (or
    cannot be opened) is resolved by ``Path.resolve`` itself, as far as it exists."""
    if _KERNEL_WAY:
        try:
            fd = os.open(path, _OPEN_FLAGS)
        except (OSError, ValueError):
            return path.resolve()
        try:
            found = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            found = ""
        finally:
            os.close(fd)
        if found.startswith("/") and not found.endswith(" (deleted)"):  # removed meanwhile
            return Path(found)
    return path.resolve()


def inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or below it: ``path.is_relative_to(folder)`` for
    absolute paths (pathlib keeps them without ``.`` parts or doubled and trailing slashes),
    compared as text; ``is_relative_to`` makes a relative path and catches the error it raises
    to say no."""
    outer, inner = str(folder), str(path)
    return inner == outer or inner.startswith(outer if outer.endswith("/") else outer + "/")


def relative_text(path: Path, folder: Path) -> str | None:
    """``str(path.relative_to(folder))`` (``.`` for the folder itself) where ``path`` is
    :func:`inside` ``folder``, else None."""
    if not inside(path, folder):
        return None
    return str(path)[len(str(folder)):].lstrip("/") or "."
