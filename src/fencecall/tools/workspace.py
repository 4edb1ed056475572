"""Keeping file tools inside the folders the user allowed."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path


class OutsideWorkspace(PermissionError):
    """A path escapes the allowed roots (by ``..``, an absolute path, or a symlink)."""


def resolve_in_roots(path: str, roots: Sequence[Path]) -> Path:
    """``path`` (relative to the first root) with symlinks resolved, if inside a root.

    Resolving first means a link inside the workspace that points elsewhere is judged by
    where it points, not where it sits.
    """
    if not path.strip():
        raise ValueError("no path given")
    base = roots[0]
    candidate = Path(path).expanduser()
    resolved = (candidate if candidate.is_absolute() else base / candidate).resolve()
    for root in roots:
        if resolved == root or resolved.is_relative_to(root):
            return resolved
    allowed = ", ".join(str(r) for r in roots)
    raise OutsideWorkspace(f"{path!r} resolves to {resolved}, outside the workspace ({allowed}); "
                           "the user can allow more folders with --root")


def display(path: Path, roots: Sequence[Path]) -> str:
    """``path`` relative to the root holding it, for messages."""
    for root in roots:
        if path.is_relative_to(root):
            return str(path.relative_to(root)) or "."
    return str(path)
