"""Keeping file tools inside the folders the user allowed, by descriptor.

A path is never checked by name and then opened by name: a process of the model's could swap a
folder for a symlink in between (``renameat2(RENAME_EXCHANGE)`` in a loop) and send the open
elsewhere. Instead :func:`locate` walks the path one component at a time, each opened relative
to the descriptor of the folder before it with ``O_NOFOLLOW``. A symlink met on the way is never
followed by the kernel: its text is read and walked the same way, so a link inside a root that
points inside a root keeps working, and what the walk ends on is where it says it is. The
caller then opens, creates and renames relative to the descriptor of the last folder.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType

from ..realpath import inside, relative_text

MAX_LINKS = 40
"""Symlinks one walk follows at most, as the kernel's own limit (ELOOP past it)."""
_FOLDER = os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC


class OutsideWorkspace(PermissionError):
    """A path escapes the allowed roots (by ``..``, an absolute path, or a symlink)."""


class PathChanged(OSError):
    """A component became a symlink or stopped being a folder while the tool used it: a
    concurrent process is swapping it, and nothing is followed there."""


@dataclass(eq=False)
class Place:
    """Where a path leads inside the roots: the descriptor of its deepest existing folder,
    the folders still to create below it, and the last name.

    ``path`` is the real path the walk arrived at (for messages and hooks, never for opening);
    ``info`` the status of the last name without following it, None where it does not exist.
    Close it (it is a context manager) to release the descriptor.
    """

    path: Path
    folder: int
    name: str
    missing: tuple[str, ...] = ()
    info: os.stat_result | None = None
    _closed: bool = field(default=False, repr=False)

    def __enter__(self) -> Place:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.close()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            os.close(self.folder)

    def make_folders(self, owner: tuple[int, int] | None = None) -> int:
        """The descriptor of the file's own folder, creating the missing ones (never through a
        link: one that appears meanwhile raises :class:`PathChanged`), each ``owner``'s (uid,
        gid), else its folder's. The caller closes it."""
        return _descend(os.dup(self.folder), self.missing, self.path, make=True, owner=owner)


def locate(given: str, roots: Sequence[Path]) -> Place:
    """Where ``given`` (relative to the first root) leads, if inside a root.

    Roots are real paths (resolved once, when the session starts). A link is judged by where
    it leads, not where it sits; ``..`` goes up from where the walk really is, as in the kernel.
    """
    if not given.strip():
        raise ValueError("no path given")
    candidate = Path(given).expanduser()
    absolute = candidate if candidate.is_absolute() else roots[0] / candidate
    place = _Walk().run(absolute)
    if not any(inside(place.path, root) for root in roots):
        place.close()
        allowed = ", ".join(str(r) for r in roots)
        raise OutsideWorkspace(f"{given!r} resolves to {place.path}, outside the workspace "
                               f"({allowed}); the user can allow more folders with --root")
    return place


def open_real_folder(path: Path) -> int:
    """A descriptor of the folder at ``path``, a real path (no symlink anywhere in it), opened
    without following any link, so a folder swapped for one on the way is refused."""
    return _descend(os.open("/", _FOLDER), path.parts[1:], path, make=False)


def display(path: Path, roots: Sequence[Path]) -> str:
    """``path`` relative to the root holding it, for messages."""
    for root in roots:
        if (relative := relative_text(path, root)) is not None:
            return relative
    return str(path)


def give_to(fd: int, owner: os.stat_result | tuple[int, int]) -> None:
    """Make ``owner``'s user and group (a file's, or a uid and gid) those of the file ``fd``
    where they differ and this process may (as root)."""
    uid, gid = (owner.st_uid, owner.st_gid) if isinstance(owner, os.stat_result) \
        else owner
    if (uid, gid) != (os.geteuid(), os.getegid()):
        with contextlib.suppress(PermissionError):  # by /proc: a folder's is an O_PATH one
            os.chown(f"/proc/self/fd/{fd}", uid, gid)


def _descend(current: int, names: Sequence[str], path: Path, *, make: bool,
             owner: tuple[int, int] | None = None) -> int:
    """From the folder ``current`` (taken over) down through ``names``, never through a link,
    making the missing ones if ``make`` (``owner``'s, else their folder's). The caller closes
    the descriptor returned."""
    try:
        for name in names:
            made = False
            if make:
                with contextlib.suppress(FileExistsError):
                    os.mkdir(name, 0o777, dir_fd=current)
                    made = True
            following = _open_folder(name, current)
            if following is None:
                raise PathChanged(errno.ENOTDIR, "not a folder, or a link (not followed)",
                                  str(path))
            if made:  # as a new file (see file_io.atomic_write)
                give_to(following, owner or os.fstat(current))
            os.close(current)
            current = following
    except BaseException:
        os.close(current)
        raise
    return current


def _open_folder(name: str, folder: int) -> int | None:
    """``name`` in ``folder`` opened as a folder without following it; None if it is not one
    (a symlink or a file); FileNotFoundError if it does not exist."""
    try:
        return os.open(name, _FOLDER, dir_fd=folder)
    except NotADirectoryError:
        return None


def _lexical(parts: list[str]) -> list[str]:
    """``parts`` with ``.`` dropped and each ``..`` taking away the name before it."""
    kept: list[str] = []
    for part in parts:
        if part == ".." and kept and kept[-1] != "..":
            kept.pop()
        elif part not in ("", "."):
            kept.append(part)
    return kept


class _Walk:
    """One resolution: the open folders from ``/`` down to where the walk is."""

    def __init__(self) -> None:
        self.names: list[str] = []
        self.fds: list[int] = []
        self.links = 0

    def run(self, absolute: Path) -> Place:
        try:
            self.fds.append(os.open("/", _FOLDER))
            return self._walk(deque(absolute.parts[1:]))
        finally:
            for fd in self.fds:
                os.close(fd)

    def _here(self, *more: str) -> Path:
        return Path("/", *self.names, *more)

    def _walk(self, pending: deque[str]) -> Place:
        while pending:
            name = pending.popleft()
            if name in ("", "."):
                continue
            if name == "..":
                if self.names:
                    self.names.pop()
                    os.close(self.fds.pop())
                continue
            if not pending:
                return self._last(name, pending)
            try:
                opened = _open_folder(name, self.fds[-1])
            except FileNotFoundError:
                return self._missing(name, pending)
            if opened is None:
                if not self._expand(name, pending):
                    raise NotADirectoryError(errno.ENOTDIR, "not a folder",
                                             str(self._here(name)))
                continue
            self.names.append(name)
            self.fds.append(opened)
        if not self.names:  # the walk ended on / itself
            raise IsADirectoryError(errno.EISDIR, "a folder", "/")
        # it ended on a folder (``a/..``): its parent holds it
        name = self.names.pop()
        os.close(self.fds.pop())
        return self._last(name, pending)

    def _last(self, name: str, pending: deque[str]) -> Place:
        try:
            info: os.stat_result | None = os.stat(name, dir_fd=self.fds[-1],
                                                  follow_symlinks=False)
        except FileNotFoundError:
            info = None
        if info is not None and stat.S_ISLNK(info.st_mode):
            if self._expand(name, pending):
                return self._walk(pending)
            raise PathChanged(errno.ESTALE, "the path changed while it was looked up; not "
                              "followed", str(self._here(name)))
        return Place(self._here(name), os.dup(self.fds[-1]), name, info=info)

    def _missing(self, name: str, pending: deque[str]) -> Place:
        """A folder that does not exist yet: the rest of the path is made, not walked (a
        ``..`` after it undoes it, as a name that is not there cannot be a link)."""
        rest = _lexical([name, *pending])
        if rest[:1] != [name]:
            pending.clear()
            pending.extend(rest)
            return self._walk(pending)
        return Place(self._here(*rest), os.dup(self.fds[-1]), rest[-1], tuple(rest[:-1]))

    def _expand(self, name: str, pending: deque[str]) -> bool:
        """Put the text of the link ``name`` before what is left of the path; False if it is
        no link (a file, or a link swapped away meanwhile)."""
        try:
            text = os.readlink(name, dir_fd=self.fds[-1])
        except OSError as err:
            if err.errno == errno.EINVAL:
                return False
            raise
        self.links += 1
        if self.links > MAX_LINKS:
            raise OSError(errno.ELOOP, "too many levels of symbolic links",
                          str(self._here(name)))
        target = Path(text)
        if target.is_absolute():
            del self.names[:]
            for fd in self.fds[1:]:
                os.close(fd)
            del self.fds[1:]
        pending.extendleft(reversed(target.parts[1:] if target.is_absolute() else target.parts))
        return True
