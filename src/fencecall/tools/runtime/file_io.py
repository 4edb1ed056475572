"""File helpers shared by the file tools: byte-exact text, safe writes and diffs.

Files are decoded with ``surrogateescape``: bytes that are not UTF-8 become lone surrogates
and are written back as the same bytes, so a tool that changes one line preserves every
other byte of the file (encodings, line endings, a missing final newline).
"""

from __future__ import annotations

import contextlib
import difflib
import errno
import os
import secrets
import stat

from ..workspace import PathChanged, Place, give_to

BINARY_SNIFF = 8192
ENCODING = "utf-8"
ERRORS = "surrogateescape"


class NotARegularFile(OSError):
    """A FIFO, socket or device: opening it could block or never end, so no tool does."""


def _check_kind(place: Place, info: os.stat_result) -> None:
    """Folders pass (the callers say what they need); FIFOs, sockets and devices raise."""
    if not (stat.S_ISREG(info.st_mode) or stat.S_ISDIR(info.st_mode)):
        raise NotARegularFile(f"{place.path} is not a regular file (a FIFO, socket or device); "
                              "file tools do not open those")


def open_existing(place: Place) -> tuple[int, os.stat_result] | None:
    """The file at ``place`` opened for reading, with its status; None if it does not exist.

    Opened relative to its folder's descriptor without following a link, and checked to be the
    entry the walk found, so a swap after the walk fails instead of reading elsewhere. Folders
    raise IsADirectoryError; FIFOs, sockets and devices :class:`NotARegularFile` (unopened).
    """
    if place.info is None or place.missing:
        return None
    _check_kind(place, place.info)
    if stat.S_ISDIR(place.info.st_mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(place.path))
    try:
        fd = os.open(place.name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC,
                     dir_fd=place.folder)
    except OSError as err:
        if err.errno in (errno.ELOOP, errno.ENOENT):
            raise PathChanged(err.errno, "the file was replaced while it was opened; not "
                              "followed", str(place.path)) from None
        raise
    info = os.fstat(fd)
    if (info.st_dev, info.st_ino) != (place.info.st_dev, place.info.st_ino):
        os.close(fd)
        raise PathChanged(errno.ESTALE, "the file was replaced while it was opened",
                          str(place.path))
    return fd, info


def read_fd(fd: int, limit: int = -1) -> bytes:
    """An opened file's bytes (at most ``limit``, where given); closes it."""
    with os.fdopen(fd, "rb") as handle:
        return handle.read(limit)


def decode(data: bytes) -> str:
    return data.decode(ENCODING, errors=ERRORS)


def encode(text: str) -> bytes:
    return text.encode(ENCODING, errors=ERRORS)


def printable(text: str) -> str:
    """``text`` with undecodable bytes shown as U+FFFD, for messages and previews."""
    return encode(text).decode(ENCODING, errors="replace")


def newline_of(text: str) -> str:
    """The file's line ending: ``\\r\\n`` when every line ends so, else ``\\n``."""
    lf = text.count("\n")
    return "\r\n" if lf and text.count("\r\n") == lf else "\n"


def atomic_write(place: Place, text: str, owner: tuple[int, int] | None = None) -> None:
    """Write ``text`` to ``place`` via a temporary file and a rename, both in the file's own
    folder by descriptor.

    A reader (or a crash) sees the old file or the new one, never half of it. Missing folders
    are created; an existing file keeps its permission bits, a new one gets the umask's. It
    keeps its owner too, and a new one (and a folder made for it) is ``owner``'s (uid, gid),
    else takes its folder's, where fencecall may give files away (as root: a container's
    user, or the owner of a folder worked in with sudo, can go on writing it).
    """
    if place.info is not None and stat.S_ISDIR(place.info.st_mode):
        # before any temporary file: a place naming a root itself has its folder outside
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(place.path))
    folder = place.make_folders(owner)
    try:
        mode = None
        if place.info is not None and stat.S_ISREG(place.info.st_mode):
            mode = place.info.st_mode & 0o7777
        temp, fd = _new_temp(folder, place.name)
        try:
            give_to(fd, place.info if place.info is not None and
                    stat.S_ISREG(place.info.st_mode) else owner or os.fstat(folder))
            with os.fdopen(fd, "wb") as handle:
                handle.write(encode(text))
                handle.flush()
                if mode is not None:
                    os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.replace(temp, place.name, src_dir_fd=folder, dst_dir_fd=folder)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(temp, dir_fd=folder)
            raise
    finally:
        os.close(folder)


def _new_temp(folder: int, name: str) -> tuple[str, int]:
    """A new hidden file beside ``name``, created exclusively (never through a link); its
    name is kept short, so a long file name still leaves room for it."""
    for _ in range(100):
        temp = f".{name[:64]}.{secrets.token_hex(4)}.tmp"
        try:
            return temp, os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                                 | os.O_CLOEXEC, 0o666, dir_fd=folder)
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary name", name)


def is_binary(data: bytes) -> bool:
    return b"\x00" in data[:BINARY_SNIFF]


def read_existing(place: Place) -> str | None:
    """The text at ``place`` (byte-exact, see the module), None if it does not exist; binary
    files raise ValueError, FIFOs, sockets and devices :class:`NotARegularFile`."""
    opened = open_existing(place)
    if opened is None:
        return None
    data = read_fd(opened[0])
    if is_binary(data):
        raise ValueError(f"{place.path} is a binary file; it will not be edited as text")
    return decode(data)


def unified_diff(before: str, after: str, name: str) -> str:
    lines = difflib.unified_diff(before.splitlines(keepends=True),
                                 after.splitlines(keepends=True),
                                 fromfile=f"a/{name}", tofile=f"b/{name}")
    return printable("".join(line if line.endswith("\n") else
                             line + "\n\\ No newline at end of file\n" for line in lines))
