"""Putting a recorded state back: byte for byte, by descriptor, never through a link.

Every folder on the way is opened relative to the workspace's descriptor with
``O_NOFOLLOW``, so a link the model planted where a folder was cannot send a write outside
the workspace: the link is removed (it is not in the recorded state) and the folder made
again. Files are written to a temporary name beside them and renamed, with their recorded
permission bits; links are made as links. What exists now and was not recorded is removed,
folders only when empty (they may hold ignored files, which a checkpoint never touches).
Paths that were not kept (too big, say) are left as they are.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from ..tools.workspace import open_real_folder
from ._store import Entry, Manifest, Store

_PATH = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

Action = Literal["changed", "restored", "removed"]


@dataclass(frozen=True, slots=True)
class Change:
    """What a restore does to one path: ``changed`` (it exists and gets its recorded
    contents), ``restored`` (it is missing and comes back), ``removed`` (it was not there)."""

    path: str
    action: Action
    folder: bool = False

    def __str__(self) -> str:
        return f"{self.action} {self.path}{'/' if self.folder else ''}"


def changes(now: Manifest, then: Manifest) -> list[Change]:
    """What going from the state ``now`` to ``then`` does, path by path (paths that either
    state did not keep are left alone)."""
    found: list[Change] = []
    for path in sorted(now.entries.keys() | then.entries.keys()):
        current, recorded = now.entries.get(path), then.entries.get(path)
        if current == recorded or path in now.skipped or path in then.skipped:
            continue
        if recorded is None:
            found.append(Change(path, "removed", current is not None and current[0] == "d"))
        elif current is None:
            found.append(Change(path, "restored", recorded[0] == "d"))
        else:
            found.append(Change(path, "changed", recorded[0] == "d"))
    return found


def restore(workspace: Path, store: Store, now: Manifest, then: Manifest) -> list[str]:
    """Make the workspace, found in state ``now``, hold ``then``; what could not be done."""
    problems: list[str] = []
    root = open_real_folder(workspace)
    try:
        steps = changes(now, then)
        for change in steps:  # files and links that go, or whose kind changes
            current, recorded = now.entries.get(change.path), then.entries.get(change.path)
            if current is not None and current[0] != "d" and (
                    recorded is None or recorded[0] != current[0]):
                _attempt(problems, change.path, _remove, root, change.path, False)
        for change in reversed(steps):  # then folders, the deepest first
            current, recorded = now.entries.get(change.path), then.entries.get(change.path)
            if current is not None and current[0] == "d" and (
                    recorded is None or recorded[0] != "d"):
                _attempt(problems, change.path, _remove, root, change.path, True)
        for change in steps:  # parents sort before their contents
            recorded = then.entries.get(change.path)
            if recorded is not None:
                _attempt(problems, change.path, _put, root, change.path, recorded, store)
    finally:
        os.close(root)
    return problems


def _attempt(problems: list[str], path: str, step: Callable[..., None], *args: object) -> None:
    """Run one step of a restore; a failure is said, and the other steps go on."""
    try:
        step(*args)
    except OSError as err:
        why = "it holds files the checkpoint did not record" \
            if err.errno == errno.ENOTEMPTY else (err.strerror or str(err))
        problems.append(f"{path}: {why}")


def _folder(root: int, parts: list[str], make: bool) -> int:
    """The descriptor of the folder ``parts`` below ``root``, entered without following a
    link (made where missing, if ``make``). The caller closes it."""
    current = os.dup(root)
    try:
        for name in parts:
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=current)
            following = os.open(name, _PATH, dir_fd=current)
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


def _remove(root: int, path: str, folder: bool) -> None:
    *parents, name = path.split("/")
    try:
        fd = _folder(root, parents, False)
    except FileNotFoundError:
        return
    try:
        if folder:
            os.rmdir(name, dir_fd=fd)
        else:
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        pass
    finally:
        os.close(fd)


def _put(root: int, path: str, entry: Entry, store: Store) -> None:
    kind, mode, value = entry
    *parents, name = path.split("/")
    fd = _folder(root, parents if kind != "d" else [*parents, name], True)
    try:
        if kind == "d":
            return
        temp = f".{name[:64]}.{secrets.token_hex(4)}.restore"
        if kind == "l":
            os.symlink(value, temp, dir_fd=fd)
        else:
            data = store.blob(value)
            opened = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                             | os.O_CLOEXEC, 0o600, dir_fd=fd)
            with os.fdopen(opened, "wb") as handle:
                handle.write(data)
                os.fchmod(handle.fileno(), mode)
        try:
            os.replace(temp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=fd)
            raise
    finally:
        os.close(fd)
