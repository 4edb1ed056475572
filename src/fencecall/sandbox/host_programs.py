"""Finding the programs fencecall starts on the host, where nothing the model wrote is found.

A program looked up on a PATH that holds ``.``, an empty entry (both mean the current folder,
often the workspace) or a folder inside a writable root (a project's ``.venv/bin``, say) could
be one the model planted there, and it would run outside the sandbox: ``bwrap`` itself, git,
an MCP server. So host programs come from the system's folders first, and every PATH fencecall
searches or hands a server on is cleaned of such entries.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Sequence
from pathlib import Path

SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def clean_path(path: str, roots: Sequence[Path]) -> str:
    """``path`` without the entries a planted program could be found through: relative ones
    (empty and ``.`` included) and those leading into a root (symlinks resolved).
    ``os.defpath`` when nothing is left, since an empty PATH means the current folder too."""
    kept = [entry for entry in path.split(os.pathsep)
            if os.path.isabs(entry) and not inside(Path(entry), roots)]
    return os.pathsep.join(kept) or os.defpath


def host_program(name: str, roots: Sequence[Path] = ()) -> str | None:
    """The absolute path of the program ``name``: from the system's folders, else from
    fencecall's own PATH cleaned by :func:`clean_path`."""
    return _system_program(name) or shutil.which(
        name, path=clean_path(os.environ.get("PATH", os.defpath), roots))


_FOUND: dict[str, str] = {}


def _system_program(name: str) -> str | None:
    """``name`` in the system's folders, looked up once: a batch starts programs (bwrap,
    nsenter...) for every task, and what root's folders hold does not move under it. A
    program not found there is looked up again each time (it may be installed later)."""
    if (found := _FOUND.get(name)) is None and \
            (found := shutil.which(name, path=SYSTEM_PATH)) is not None:
        _FOUND[name] = found
    return found


def inside(path: Path, roots: Sequence[Path]) -> bool:
    """Whether ``path`` (symlinks resolved) is one of ``roots`` or below one."""
    resolved = path.resolve()
    return any(resolved == root or root in resolved.parents
               for root in (r.resolve() for r in roots))
