"""Reading the workspace's state into a manifest, by descriptor and without following links.

Each folder is opened relative to its parent's descriptor with ``O_NOFOLLOW``, so a link the
model planted is recorded as a link, never entered. Nested ``.git`` entries (folders or the
files of worktrees and submodules), what ``.gitignore`` ignores, fencecall's own folders and
anything but regular files, links and folders are left out. A file's hash is taken again only
where its size, mtime, inode or ctime changed since the last scan (the stat cache), unless it
changed so shortly before that scan that a later write in the same clock tick could have left
them all the same (git's "racily clean" entries), so a checkpoint of a large workspace where
little changed reads little.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..tools.workspace import open_real_folder
from ._ignore import GITIGNORE, Ignores
from ._store import Entry, Manifest, Store, digest

MAX_FILE = 16 * 2**20
"""A bigger file is not kept (the manifest says so)."""
MAX_NEW = 256 * 2**20
"""Bytes of new contents one checkpoint keeps at most; the files past it are not kept."""
MAX_ENTRIES = 100_000
"""Paths a workspace may hold for checkpoints to be kept of it (past it, none are)."""
MAX_DEPTH = 200
MAX_GITIGNORE = 2**20
"""Bytes of a ``.gitignore`` read at most."""
RACY_NS = 100_000_000
"""A file changed less than this before a scan is hashed again at the next."""
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


@dataclass(slots=True)
class _Scan:
    """One scan under way: what it found and what it kept."""

    started: int
    entries: dict[str, Entry] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    cache: dict[str, list[Any]] = field(default_factory=dict)
    new_bytes: int = 0


class TooManyFiles(OSError):
    """The workspace holds more paths than checkpoints are kept of."""


class Scanner:
    """Scans one workspace into manifests kept in ``store``, leaving out the folders
    ``excluded`` (fencecall's own, where they lie inside the workspace)."""

    def __init__(self, workspace: Path, store: Store, *, excluded: tuple[Path, ...] = (),
                 max_file: int = MAX_FILE, max_new: int = MAX_NEW,
                 max_entries: int = MAX_ENTRIES) -> None:
        self.workspace = workspace
        self.max_entries = max_entries
        self.store = store
        self.max_file = max_file
        self.max_new = max_new
        self._excluded = {(info.st_dev, info.st_ino) for info in map(_stat, excluded) if info}
        self._cache = self._saved = store.load_cache()

    def scan(self) -> Manifest:
        """The workspace's state now, its new contents kept in the store."""
        scan = _Scan(time.time_ns())
        path_fd = open_real_folder(self.workspace)
        try:
            root = os.open(".", _DIR, dir_fd=path_fd)
        finally:
            os.close(path_fd)
        try:
            self._folder(root, "", Ignores(), scan, 0)
        finally:
            os.close(root)
        self._cache = scan.cache
        return Manifest(scan.entries, scan.skipped)

    def save_cache(self) -> None:
        """Keep the stat cache for the next process (a resumed conversation's)."""
        if self._cache != self._saved:
            self.store.save_cache(self._cache)
            self._saved = self._cache

    def _folder(self, fd: int, prefix: str, ignores: Ignores, scan: _Scan, depth: int) -> None:
        ignores = ignores.below(prefix, _gitignore(fd))
        folders: list[str] = []
        with os.scandir(fd) as found:
            for entry in found:
                name = entry.name
                path = prefix + name
                try:
                    info = entry.stat(follow_symlinks=False)
                except FileNotFoundError:
                    continue
                if name == ".git" or ignores.ignored(path, stat.S_ISDIR(info.st_mode)):
                    continue
                if len(scan.entries) + len(scan.skipped) >= self.max_entries:
                    raise TooManyFiles(f"{self.workspace} holds more than "
                                       f"{self.max_entries:,} files and folders (not ignored)")
                if stat.S_ISDIR(info.st_mode):
                    if (info.st_dev, info.st_ino) not in self._excluded:
                        folders.append(name)
                elif stat.S_ISLNK(info.st_mode):
                    scan.entries[path] = ("l", 0, os.readlink(name, dir_fd=fd))
                elif stat.S_ISREG(info.st_mode):
                    self._file(fd, name, path, info, scan)
                else:
                    scan.skipped[path] = "not a regular file, a link or a folder"
        for name in folders:
            self._enter(fd, name, prefix + name, ignores, scan, depth + 1)

    def _enter(self, fd: int, name: str, path: str, ignores: Ignores, scan: _Scan,
               depth: int) -> None:
        if depth > MAX_DEPTH:
            scan.skipped[path] = f"nested more than {MAX_DEPTH} folders deep"
            return
        try:
            child = os.open(name, _DIR, dir_fd=fd)
        except OSError as err:
            if err.errno not in (errno.ENOENT, errno.ENOTDIR, errno.ELOOP, errno.EACCES):
                raise
            if err.errno == errno.EACCES:
                scan.skipped[path] = "a folder that cannot be read"
            return
        scan.entries[path] = ("d", 0, "")
        try:
            self._folder(child, path + "/", ignores, scan, depth)
        finally:
            os.close(child)

    def _file(self, fd: int, name: str, path: str, info: os.stat_result, scan: _Scan) -> None:
        key = [info.st_size, info.st_mtime_ns, info.st_ino, info.st_ctime_ns]
        mode = stat.S_IMODE(info.st_mode)
        cached = self._cache.get(path)
        if cached is not None and cached[:4] == key and cached[5]:  # blobs are never removed
            scan.entries[path] = ("f", mode, cached[4])
            scan.cache[path] = cached
            return
        if info.st_size > self.max_file:
            scan.skipped[path] = (f"{_size(info.st_size)}, over the {_size(self.max_file)} "
                                  "a file may have")
            return
        try:
            data = _read(fd, name, self.max_file + 1)
        except FileNotFoundError:
            return
        except PermissionError:
            scan.skipped[path] = "a file that cannot be read"
            return
        if len(data) > self.max_file:  # it grew while it was read
            scan.skipped[path] = f"over the {_size(self.max_file)} a file may have"
            return
        name_ = digest(data)
        if not self.store.has_blob(name_):
            if scan.new_bytes + len(data) > self.max_new:
                scan.skipped[path] = (f"the checkpoint's {_size(self.max_new)} of new "
                                      "contents were used up")
                return
            scan.new_bytes += len(data)
            self.store.put_blob(data, name_)
        scan.entries[path] = ("f", mode, name_)
        scan.cache[path] = [*key, name_, info.st_mtime_ns < scan.started - RACY_NS]


def _read(fd: int, name: str, limit: int) -> bytes:
    """At most ``limit`` bytes of the regular file ``name`` in the folder ``fd`` (a link is
    not followed, a FIFO put there meanwhile not waited on)."""
    opened = os.open(name, _FILE, dir_fd=fd)
    with os.fdopen(opened, "rb") as handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            raise FileNotFoundError(errno.ENOENT, "no longer a regular file", name)
        return handle.read(limit)


def _gitignore(fd: int) -> str | None:
    """The text of the folder's own ``.gitignore`` (a regular file, not a link), if any."""
    try:
        data = _read(fd, GITIGNORE, MAX_GITIGNORE)
    except OSError:
        return None
    return data.decode("utf-8", errors="replace")


def _stat(path: Path) -> os.stat_result | None:
    try:
        return path.stat()
    except OSError:
        return None


def _size(count: int) -> str:
    return f"{count / 2**20:.1f} MB" if count >= 2**20 else f"{count} bytes"
