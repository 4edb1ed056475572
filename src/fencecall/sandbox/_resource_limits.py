"""Resource limits for the processes the tools start: how many, how much memory, how big a file.

The kernel enforces them, whatever the command does. Every process gets rlimits through
fencecall's launcher (:mod:`._launch`), else util-linux's ``prlimit`` (each sets them and
execs the program, so no ``preexec_fn`` is needed): ``RLIMIT_FSIZE`` caps each file it
writes, ``RLIMIT_NPROC`` the processes of its user. Root is exempt from ``RLIMIT_NPROC`` (and
fencecall often runs as root, in CI and containers), and ``RLIMIT_AS`` counts per process,
so where fencecall may make control groups (cgroup v1 or v2, writable: root, or a delegated
subtree) each started process gets one of its own with ``pids.max`` and a memory limit,
joined before the program runs (a process forked later cannot be outside it) by the
launcher, else by a tiny ``sh``. Without control groups, ``RLIMIT_AS`` stands in for the
memory limit, per process.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import os
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import Enum
from pathlib import Path

from . import _launch
from .host_programs import host_program
from .scratch import process_alive

MiB = 1024 * 1024
GiB = 1024 * MiB


@dataclass(frozen=True, slots=True)
class ResourceLimits:
    """What one sandbox (one shell, one interpreter, one unconfirmed run) may take. Zero
    means no limit. The defaults stop a fork bomb and a memory bomb and leave room for a
    build (``make -j``, a linker, a test suite)."""

    processes: int = 1024
    """Processes and threads at once."""
    memory: int = 8 * GiB
    """Bytes of memory (all its processes together where control groups exist; else each
    process's address space)."""
    file_size: int = 4 * GiB
    """Bytes of any one file it writes (``RLIMIT_FSIZE``); runs nobody confirmed get the
    output cap instead."""
    output: int = 64 * MiB
    """Bytes of output (stdout and stderr, on disk) a command or job may write before it is
    stopped; also what a run nobody confirmed may write to any file."""
    tmp: int = 256 * MiB
    """Bytes of each private tmpfs inside the sandbox (its /tmp when it has no folder of
    the session's, /run, /dev/shm), which live in memory."""

    def __post_init__(self) -> None:
        for name in ("processes", "memory", "file_size", "output", "tmp"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise ValueError(f"limit {name} must be a whole number, 0 or more "
                                 f"(got {value!r})")

    def unconfirmed(self) -> ResourceLimits:
        """The limits of a run nobody confirmed: no file bigger than the output cap."""
        caps = [cap for cap in (self.output, self.file_size) if cap]
        return replace(self, file_size=min(caps, default=0))


_PRLIMIT = host_program("prlimit")
_SH = host_program("sh") or "/bin/sh"
_JOIN = ('while [ "$1" != -- ]; do echo $$ >"$1" || exit 126; shift; done; shift; '
         'exec "$@"')
"""Runs as ``sh -c _JOIN sh PROCS... -- PROGRAM...``: the shell moves itself into each group
and becomes the program, so every process the program starts is in them."""
_PREFIX = "fencecall-"


ADDRESS_SPACE_FACTOR = 2
"""Without a memory group, each process may reserve this many times ``memory`` of address
space: JVMs and V8 reserve far more than they use, and a build must not fail for it."""


def limited(argv: Sequence[str], limits: ResourceLimits, group: Cgroup | None) -> list[str]:
    """``argv`` started under ``limits``: in ``group`` (made for it) when given, with the
    rlimits set by fencecall's launcher (see :mod:`._launch`), else by prlimit (when
    util-linux has it) after a ``sh`` joined the group. What the group holds is not set
    again as an rlimit: ``RLIMIT_NPROC`` counts every process of the user, not the
    sandbox's, so without a group it is set to what the user runs now plus ``processes``
    (and not at all for root, whom the kernel exempts). An ``argv`` that already starts
    with the launcher (entering a shared network) gets the steps added to it."""
    launcher = _launch.launcher()
    flags = _rlimit_flags(limits, group) if launcher is not None or _PRLIMIT is not None \
        else []
    procs = [] if group is None else [str(path) for path in group.procs]
    if launcher is not None:
        steps = [*(f"--join={path}" for path in procs), *flags]
        if argv and argv[0] == launcher:
            return [launcher, *steps, *argv[1:]]
        return [launcher, *steps, "--", *argv] if steps else list(argv)
    command = [_PRLIMIT, *flags, "--", *argv] if flags and _PRLIMIT is not None else list(argv)
    if procs:
        command = [_SH, "-c", _JOIN, "sh", *procs, "--", *command]
    return command


def _rlimit_flags(limits: ResourceLimits, group: Cgroup | None) -> list[str]:
    """The rlimits to set, as prlimit's (and the launcher's) options."""
    flags = []
    if limits.file_size:
        flags.append(f"--fsize={limits.file_size}")
    if limits.processes and (group is None or not group.limits_processes) and os.getuid():
        flags.append(f"--nproc={_user_tasks() + limits.processes}")
    if limits.memory and (group is None or not group.limits_memory):
        flags.append(f"--as={limits.memory * ADDRESS_SPACE_FACTOR}")
    return flags


def _user_tasks() -> int:
    """Processes and threads of this user now (what ``RLIMIT_NPROC`` counts)."""
    uid, count = os.getuid(), 0
    with contextlib.suppress(OSError):
        for name in os.listdir("/proc"):
            if name.isdigit():
                with contextlib.suppress(OSError):
                    info = os.stat(f"/proc/{name}/task")
                    if info.st_uid == uid:
                        count += info.st_nlink - 2
    return count


@dataclass(frozen=True, slots=True)
class _Controller:
    base: Path
    """The folder of fencecall's own group in this controller's hierarchy."""
    limit_file: str
    """Where the limit is written: pids.max, memory.limit_in_bytes or memory.max."""
    usage_file: str = ""
    """Where the memory a group holds is read: memory.usage_in_bytes or memory.current."""


class _Use(Enum):
    """Whether a group has processes in it."""

    BUSY = "busy"
    EMPTY = "empty"
    GONE = "gone"
    """A folder of it was removed, or cannot be read."""


class Cgroup:
    """A control group of a started process (in each hierarchy that has the controller).
    Once that process was reaped and every process in it has ended, it is kept for the next
    start with the same limits:
    making one costs the kernel far more than reading that one is empty (a memory group
    most of all). One that still holds memory (files its processes left in a tmpfs are
    charged to it) is removed instead, so that the next process gets all of its limit; so
    are the rest at exit."""

    def __init__(self, folders: list[Path], limits_processes: bool, limits_memory: bool,
                 key: tuple[int, int] = (0, 0)):
        self.folders = folders
        self.limits_processes = limits_processes
        self.limits_memory = limits_memory
        self.key = key
        """The limits it was made with (processes, memory): it is used again for those only."""

    @property
    def procs(self) -> list[Path]:
        return [folder / "cgroup.procs" for folder in self.folders]

    @classmethod
    def create(cls, limits: ResourceLimits) -> Cgroup | None:
        """A group with ``limits`` (one an ended process left, else a new one), or None where
        fencecall cannot make one here."""
        _tidy()
        key = (limits.processes, limits.memory)
        if idle := _idle.get(key):
            group: Cgroup | None = idle.pop()
        else:
            group = cls._make(limits, key)
        if group is not None:
            _made[group] = _Watch(time.monotonic())
        return group

    @classmethod
    def _make(cls, limits: ResourceLimits, key: tuple[int, int]) -> Cgroup | None:
        name = f"{_PREFIX}{os.getpid()}-{os.urandom(6).hex()}"  # secrets.token_hex(6)
        folders: list[Path] = []
        limited_by: set[str] = set()
        for controller, value in (("pids", limits.processes), ("memory", limits.memory)):
            found = _controllers().get(controller)
            if not value or found is None:
                continue
            folder = found.base / name
            try:
                folder.mkdir(exist_ok=folder in folders)
                (folder / found.limit_file).write_text(str(value))
            except OSError:
                continue
            finally:
                if folder not in folders and folder.is_dir():
                    folders.append(folder)
            limited_by.add(controller)
        return cls(folders, "pids" in limited_by, "memory" in limited_by, key) \
            if folders else None

    def started(self, process: subprocess.Popen[bytes]) -> None:
        """Say which process it was made for: once that one is reaped and the group is empty,
        it has ended with every process it started (it cannot join any more)."""
        watch = _made.get(self)
        if watch is not None:
            watch.process = process

    def use(self) -> _Use:
        """Whether a process is in it now (read from each hierarchy's list)."""
        for path in self.procs:
            try:
                if _read_small(path).strip():
                    return _Use.BUSY
            except OSError:
                return _Use.GONE
        return _Use.EMPTY

    def holds_memory(self) -> bool:
        """Whether it is still charged with more than :data:`_HELD_MEMORY`."""
        memory = _controllers().get("memory")
        for folder in self.folders:
            if memory is not None and memory.usage_file and folder.parent == memory.base:
                try:
                    return int(_read_small(folder / memory.usage_file)) > _HELD_MEMORY
                except (OSError, ValueError):
                    return True
        return False

    def remove(self) -> None:
        for folder in self.folders:
            with contextlib.suppress(OSError):  # gone, or in use still (at exit)
                folder.rmdir()


def _read_small(path: Path) -> bytes:
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return os.read(fd, 4096)
    finally:
        os.close(fd)


class _Watch:
    """When a group was handed out, for which process, and when to look at it again."""

    __slots__ = ("look_at", "process", "since", "wait")

    def __init__(self, since: float) -> None:
        self.since = since
        self.process: subprocess.Popen[bytes] | None = None
        self.wait = _FIRST_LOOK
        """Seconds until the next look (doubling, up to :data:`_LOOK_AGAIN`)."""
        self.look_at = since + self.wait

    def ended(self, now: float) -> bool:
        """Whether its process has ended and was reaped (by whoever started it), so that
        an empty group is one it has left; without a process (its start failed), once it
        could have joined."""
        if self.process is not None:
            return self.process.returncode is not None
        return now - self.since >= _JOINED_WITHIN

    def later(self, now: float) -> None:
        self.wait = min(self.wait * 2, _LOOK_AGAIN)
        self.look_at = now + self.wait


_made: dict[Cgroup, _Watch] = {}
"""The groups this process handed out that may still be in use."""
_idle: dict[tuple[int, int], list[Cgroup]] = {}
"""Empty groups kept for the next start, by the limits they hold."""
_IDLE_KEPT = 256
"""Empty groups kept, at most, for each set of limits."""
_HELD_MEMORY = 64 * MiB
_JOINED_WITHIN = 10.0
"""Seconds after which a group handed out for no process (its start failed) is surely not
joined any more."""
_FIRST_LOOK = 1.0
"""Seconds after a group is handed out before the first look at it."""
_LOOK_AGAIN = 60.0
"""Seconds between looks, at most, at a group in use."""


def _tidy() -> None:
    """Keep for the next starts (or remove) the groups whose processes have all ended."""
    now = time.monotonic()
    for group, watch in list(_made.items()):
        if now < watch.look_at:
            continue
        use = group.use()
        if use is _Use.BUSY or (use is _Use.EMPTY and not watch.ended(now)):
            watch.later(now)
            continue
        del _made[group]
        idle = _idle.setdefault(group.key, [])
        if use is _Use.GONE or len(idle) >= _IDLE_KEPT or group.holds_memory():
            group.remove()
        else:
            idle.append(group)


def _remove_all() -> None:
    """Remove every group this process made (at exit: one still in use stays, for the next
    fencecall's :func:`sweep_groups`)."""
    for group in [*_made, *(group for idle in _idle.values() for group in idle)]:
        group.remove()
    _made.clear()
    _idle.clear()


atexit.register(_remove_all)


def _remove_group(folder: Path) -> None:
    """Kill what runs in ``folder`` and remove it."""
    for _ in range(50):
        try:
            folder.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            with contextlib.suppress(OSError, ValueError):
                for word in (folder / "cgroup.procs").read_text().split():
                    with contextlib.suppress(ProcessLookupError):
                        os.kill(int(word), 9)
            time.sleep(0.01)


@functools.cache
def _controllers() -> dict[str, _Controller]:
    """The writable hierarchies of the pids and memory controllers, at fencecall's group."""
    own: dict[str, str] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/cgroup").read_text().splitlines():
            _, names, path = line.split(":", 2)
            for name in names.split(",") if names else [""]:
                own[name] = path
    found: dict[str, _Controller] = {}
    with contextlib.suppress(OSError):
        for line in Path("/proc/self/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) < 4:
                continue
            point, kind, options = Path(fields[1]), fields[2], fields[3].split(",")
            if kind == "cgroup":
                for name, limit, usage in (("pids", "pids.max", ""),
                                           ("memory", "memory.limit_in_bytes",
                                            "memory.usage_in_bytes")):
                    if name in options and name in own:
                        found.setdefault(name, _Controller(_at(point, own[name]), limit, usage))
            elif kind == "cgroup2" and "" in own:
                _v2(point / own[""].lstrip("/"), found)
    return {name: c for name, c in found.items() if os.access(c.base, os.W_OK)}


def _at(point: Path, path: str) -> Path:
    return point / path.lstrip("/")


def _v2(base: Path, found: dict[str, _Controller]) -> None:
    """Controllers of a cgroup v2 group whose children may use them."""
    try:
        enabled = (base / "cgroup.subtree_control").read_text().split()
    except OSError:
        return
    for name, limit, usage in (("pids", "pids.max", ""), ("memory", "memory.max",
                                                          "memory.current")):
        if name in enabled:
            found.setdefault(name, _Controller(base, limit, usage))


def sweep_groups() -> list[Path]:
    """Remove the groups of fencecall processes that no longer run (``kill -9`` left them,
    with whatever ran in them); returns them."""
    removed = []
    for controller in _controllers().values():
        with contextlib.suppress(OSError):
            for folder in controller.base.iterdir():
                owner = folder.name.removeprefix(_PREFIX).split("-", 1)[0]
                if folder.name.startswith(_PREFIX) and owner.isdigit() \
                        and not process_alive(int(owner)):
                    _remove_group(folder)
                    removed.append(folder)
    return removed


@functools.cache
def sweep_groups_once() -> None:
    """:func:`sweep_groups`, once per process (at the first session)."""
    sweep_groups()
