"""An operating-system sandbox (bubblewrap) for the processes the shell and python tools run.

The tools' own checks (which commands count as read-only, confirmation prompts) are advice
for an honest model; a hostile one is stopped only by what the kernel enforces. ``bwrap``
starts the process in fresh namespaces: the whole filesystem is mounted read-only except the
workspace roots (under ``WORKSPACE_WRITE``) and the session's scratch folders; ``/tmp`` is
private (empty, or a folder of the session's); ``/run`` is empty (it holds the sockets of
docker, D-Bus and systemd, which would let a command start processes outside); the network is
loopback only unless allowed (one loopback shared by a conversation's sandboxes, see
:func:`share_network`, else one per sandbox); ``/proc`` shows only the sandbox's processes, so
fencecall's environment cannot be read back through it; every capability is dropped, so root
inside cannot remount anything writable. Commands keep fencecall's uid (root stays root),
which keeps file ownership and git's safe-directory checks as they were.
"""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from pathlib import Path

from ..realpath import inside, real_path
from ._netns import SharedNetwork
from ._resource_limits import ResourceLimits
from .host_programs import host_program

INSTALL_HINT = "apt-get install -y bubblewrap"
_PROBE_TIMEOUT = 10.0


class SandboxPolicy(StrEnum):
    READ_ONLY = "read-only"
    """The whole filesystem read-only (the workspace too), no network, private /tmp (read-only
    too when it is a folder given as ``Sandbox.tmp``)."""
    WORKSPACE_WRITE = "workspace-write"
    """Writes only in the writable roots and a private /tmp; no network unless allowed."""
    OFF = "off"
    """No sandbox: processes run with fencecall's own rights."""


@dataclass(frozen=True, slots=True)
class SandboxSupport:
    available: bool
    reason: str
    """When not available: why, and how to install bubblewrap."""


@dataclass(frozen=True, slots=True)
class _Bwrap:
    """What the probe found: the binary and the isolation flags this bwrap accepts."""

    path: str
    isolation: tuple[str, ...]
    sized: bool = True
    """Whether it takes ``--size`` for a tmpfs (bwrap 0.7 and later)."""


_ISOLATION = (
    "--unshare-all",  # user, ipc, pid, net, uts and cgroup namespaces
    "--unshare-user",  # required by --disable-userns (--unshare-all only tries it)
    "--disable-userns",  # no nested user namespace, so no capabilities regained inside
    "--cap-drop", "ALL",  # as root, bwrap would otherwise keep every capability (remount rw)
    "--die-with-parent",  # SIGKILL the sandbox when fencecall dies
)
_OLD_BWRAP_ISOLATION = tuple(f for f in _ISOLATION if f not in ("--unshare-user",
                                                                "--disable-userns"))
"""For bwrap before 0.8, which lacks --disable-userns; dropped capabilities still hold."""


_MASKED = ("/tmp", "/run")
"""Folders the sandbox replaces with its own (empty, or the conversation's /tmp)."""


def _system_mounts(network: bool, tmp: Path | None,
                   tmpfs_size: int = 0) -> list[tuple[str, ...]]:
    """The mounts every sandbox gets, as (flag, path...) tuples. ``/tmp`` is an empty tmpfs
    or the folder ``tmp``; ``/run``, which holds the sockets of host daemons, is an empty
    tmpfs; so is ``/dev/shm``. A tmpfs lives in memory: each holds ``tmpfs_size`` bytes at
    most (0: the kernel's default, half the memory)."""
    size = ("--size", str(tmpfs_size)) if tmpfs_size else ()
    mounts = [("--ro-bind", "/", "/"), ("--dev", "/dev"), ("--proc", "/proc"),
              # bwrap leaves /proc/sys writable when fencecall runs as root: sysctls check
              # only for host uid 0, so kernel.core_pattern would run a program as host root
              ("--ro-bind", "/proc/sys", "/proc/sys"), (*size, "--tmpfs", "/dev/shm"),
              (*size, "--tmpfs", "/tmp") if tmp is None
              else ("--bind", str(real_path(tmp)), "/tmp")]
    if os.path.isdir("/run") and not os.path.islink("/run"):
        mounts.append((*size, "--tmpfs", "/run"))
    if network:  # name resolution may live under /run (systemd-resolved's stub-resolv.conf)
        resolv = os.path.realpath("/etc/resolv.conf")
        if resolv.startswith("/run/"):
            mounts.append(("--ro-bind-try", resolv, resolv))
    return mounts


def _mount_args(system: list[tuple[str, ...]], binds: list[tuple[str, ...]]) -> list[str]:
    """Mounts in an order where none hides another: parents before children (by depth of the
    target), and at equal depth the sandbox's own before the caller's, so a workspace under
    /tmp is bound after the private /tmp and a root of / cannot bring back the host's /proc."""
    ordered = sorted([(0, mount) for mount in system] + [(1, mount) for mount in binds],
                     key=lambda item: (_depth(item[1][-1]), item[0]))
    return [arg for _, mount in ordered for arg in mount]


def _depth(path: str) -> int:
    """``len(PurePosixPath(path).parts)`` of an absolute path, without making the path."""
    return 1 + sum(1 for part in path.split("/") if part not in ("", "."))


@functools.cache
def _probe() -> tuple[SandboxSupport, _Bwrap | None]:
    """Run ``bwrap ... true`` once per process with the real flags: bwrap on PATH is not
    enough (containers and some distributions forbid the namespaces it needs). bwrap is taken
    from the system's folders first, never from a relative PATH entry."""
    path = host_program("bwrap")
    if path is None:
        return SandboxSupport(False, f"bwrap (bubblewrap) is not installed; install it with "
                                     f"`{INSTALL_HINT}`."), None
    error = ""
    for isolation, sized in ((_ISOLATION, True), (_OLD_BWRAP_ISOLATION, True),
                             (_OLD_BWRAP_ISOLATION, False)):
        mounts = _mount_args(_system_mounts(False, None, ResourceLimits().tmp * sized), [])
        try:
            done = subprocess.run([path, *isolation, *mounts, "--", "true"],
                                  stdin=subprocess.DEVNULL, capture_output=True, text=True,
                                  timeout=_PROBE_TIMEOUT)
        except (OSError, subprocess.SubprocessError) as err:
            error = str(err)
            break
        if done.returncode == 0:
            return SandboxSupport(True, ""), _Bwrap(path, isolation, sized)
        error = done.stderr.strip() or f"exit status {done.returncode}"
    return SandboxSupport(False, f"bwrap cannot create its sandbox here ({error}); it needs "
                                 f"user namespaces (not allowed in unprivileged containers) and "
                                 f"a working bubblewrap (`{INSTALL_HINT}`)."), None


def sandbox_support() -> SandboxSupport:
    """Whether commands can run sandboxed on this machine; probed once, never raises."""
    return _probe()[0]


@functools.cache
def _runtime_paths() -> tuple[Path, ...]:
    """What the tools need that may live under a folder the sandbox replaces (a virtual
    environment or a checkout under /tmp, as in a CI job): Python's prefixes, fencecall's own
    code (the python tool's driver) and the folders on PATH. Bound back read-only."""
    masked = [Path(folder) for folder in _MASKED]
    candidates = {sys.prefix, sys.exec_prefix, sys.base_prefix,
                  str(Path(__file__).resolve().parents[1]),  # the fencecall package
                  *os.environ.get("PATH", "").split(os.pathsep)}
    found = []
    for candidate in sorted(c for c in candidates if c):
        path = Path(candidate).resolve()
        if path.is_dir() and any(inside(path, folder) and path != folder for folder in masked):
            found.append(path)
    return tuple(found)


@dataclass(frozen=True, slots=True)
class Sandbox:
    policy: SandboxPolicy
    writable: tuple[Path, ...] = ()
    """The workspace roots: writable under WORKSPACE_WRITE, visible under every policy."""
    network: bool = False
    tmp: Path | None = None
    """A host folder to mount as /tmp, so the sandboxes given the same one share it (a shell
    and its read-only runs; shell and python); writable like the roots, so read-only under
    READ_ONLY. None: an empty /tmp of the sandbox's own, writable under every policy."""
    shared_network: SharedNetwork | None = None
    """The conversation's network namespace, which the sandbox joins instead of making a
    loopback of its own (see :func:`share_network`); ignored when ``network`` is allowed."""
    limits: ResourceLimits = field(default_factory=ResourceLimits)
    """What its processes may take (applied with the sandbox off too)."""

    @property
    def enforced(self) -> bool:
        return self.policy is not SandboxPolicy.OFF

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """The descriptors a process started with :meth:`command`'s argv must inherit (Popen's
        ``pass_fds``): those of the shared network namespace, if it joins one."""
        joined = self._joined_network()
        return joined.pass_fds if joined is not None else ()

    def _joined_network(self) -> SharedNetwork | None:
        return self.shared_network if self.enforced and not self.network else None

    def read_only(self) -> Sandbox:
        """The sandbox of a run nobody confirmed: nothing writable but its private tmpfs, no
        network whatever ``network`` says (a private loopback: the conversation's, or one of
        its own), no file bigger than the output cap. OFF stays OFF."""
        if not self.enforced:
            return self
        return replace(self, policy=SandboxPolicy.READ_ONLY, network=False,
                       limits=self.limits.unconfirmed())

    def command(self, argv: Sequence[str], *, scratch: Sequence[Path] = (),
                inputs: Sequence[Path] = (), cwd: Path | None = None,
                seccomp: int | None = None) -> list[str]:
        """``argv`` wrapped in bwrap (unchanged when OFF), behind what enters a shared network
        when it joins one (:attr:`SharedNetwork.prefix`; start it with :attr:`pass_fds`
        then). ``scratch`` folders stay writable under every policy; ``inputs`` are visible,
        read-only (the session's own command files). ``seccomp`` is a descriptor of a
        compiled filter to load (see :mod:`._seccomp`; pass it to the process too)."""
        if not self.enforced:
            return list(argv)
        bwrap = _probe()[1] or _Bwrap("bwrap", _ISOLATION)
        joined = self._joined_network()
        args = [*(joined.prefix if joined is not None else ()), bwrap.path, *bwrap.isolation]
        if self.network or joined is not None:
            args.append("--share-net")
        tmpfs_size = self.limits.tmp if bwrap.sized else 0
        args += _mount_args(_system_mounts(self.network, self.tmp, tmpfs_size),
                            self._binds(scratch, inputs, cwd))
        if self.tmp is not None and self.policy is SandboxPolicy.READ_ONLY:
            # only now: bwrap had to create mount points for the binds below /tmp there
            args += ["--remount-ro", "/tmp"]
        # /dev is a tmpfs bwrap makes with no size: read-only once /dev/shm is mounted in it
        args += ["--remount-ro", "/dev"]
        if seccomp is not None:
            args += ["--seccomp", str(seccomp)]
        if cwd is not None:
            args += ["--chdir", str(real_path(cwd))]
        return [*args, "--", *argv]

    def _binds(self, scratch: Sequence[Path], inputs: Sequence[Path],
               cwd: Path | None) -> list[tuple[str, ...]]:
        """Bind mounts for the roots, scratch folders and a cwd outside them (which may be
        under the private /tmp). Paths are resolved: a workspace reached through a symlink
        under /tmp would not exist inside. A root inside another is not bound on its own:
        the model could swap a folder on its path for a link, and bwrap would follow it."""
        root_flag = ("--bind-try" if self.policy is SandboxPolicy.WORKSPACE_WRITE
                     else "--ro-bind-try")
        binds = [(root_flag, path) for path in _outermost(self.writable)]
        binds += [("--bind", real_path(path)) for path in scratch]
        binds += [("--ro-bind", real_path(path)) for path in inputs]
        real_cwd = real_path(cwd) if cwd is not None else None
        if real_cwd is not None and not any(inside(real_cwd, path) for _, path in binds):
            binds.append(("--ro-bind-try", real_cwd))
        for path in _runtime_paths():
            if not any(inside(path, bound) for _, bound in binds):
                binds.append(("--ro-bind-try", path))
        return [(flag, str(path), str(path)) for flag, path in binds]


def _outermost(roots: Sequence[Path]) -> list[Path]:
    """The roots no other root holds, each at the real path it had when the sandbox was made;
    a root whose real path has changed since (a folder on its path swapped for a link) is
    refused, never followed."""
    kept: list[Path] = []
    for root in roots:
        if real_path(root) != root:
            raise PermissionError(f"the folder {root} is no longer where it was (a folder on "
                                  "its path was replaced, perhaps by a link); the sandbox "
                                  "will not start")
        if not any(inside(root, other) for other in roots if other != root):
            kept.append(root)
    return kept


def choose_sandbox(policy: SandboxPolicy | str, writable: Sequence[Path], *,
                   network: bool = False,
                   limits: ResourceLimits | None = None) -> tuple[Sandbox, str | None]:
    """The sandbox to use and a warning to show once: where bwrap is missing or cannot create
    its namespaces, commands run unsandboxed (OFF), never silently. ``limits`` hold with or
    without it (default: :class:`ResourceLimits`' own)."""
    chosen = SandboxPolicy(policy)
    roots = tuple(real_path(Path(path)) for path in writable)
    limits = limits or ResourceLimits()
    if chosen is SandboxPolicy.OFF:
        return Sandbox(chosen, roots, network, limits=limits), None
    support = sandbox_support()
    if support.available:
        return Sandbox(chosen, roots, network, limits=limits), None
    return Sandbox(SandboxPolicy.OFF, roots, network, limits=limits), (
        f"The {chosen} sandbox is not available, so shell and python commands run WITHOUT "
        f"operating-system protection: {support.reason}")


def share_network(sandbox: Sandbox) -> tuple[Sandbox, str | None]:
    """``sandbox`` joined to a new network namespace (loopback only) and None, for a
    conversation to make once: the sandboxes derived from it share one loopback, so a server
    started in the shell is reachable from the python tool, read-only runs and later shells.
    The caller closes ``shared_network`` when the conversation ends. Where that is not needed
    or not possible: ``sandbox`` unchanged, and why (each sandbox then has a loopback of its
    own, as before)."""
    if not sandbox.enforced:
        return sandbox, "the sandbox is off, so commands use the host's network"
    if sandbox.network:
        return sandbox, "the network is allowed, so sandboxes share the host's"
    if sandbox.shared_network is not None:
        return sandbox, None
    reason = _network_probe()
    if reason is None:
        try:
            return replace(sandbox, shared_network=SharedNetwork.create()), None
        except OSError as err:
            reason = str(err)
    return sandbox, f"each sandbox has a loopback of its own: {reason}"


@functools.cache
def _network_probe() -> str | None:
    """Why sandboxes cannot share a network here, or None when they can: run ``true`` in two
    sandboxes of one (the first makes it where the launcher does, the second joins it), once
    per process with the real flags, as :func:`_probe` does."""
    try:
        with SharedNetwork.create() as network:
            sandbox = Sandbox(SandboxPolicy.READ_ONLY, shared_network=network)
            for _ in range(2):
                argv = sandbox.command(["true"])
                done = subprocess.run(argv, pass_fds=sandbox.pass_fds,
                                      stdin=subprocess.DEVNULL, capture_output=True,
                                      text=True, timeout=_PROBE_TIMEOUT)
                if done.returncode != 0:
                    return (f"{Path(argv[0]).name} and bwrap cannot start a sandbox in it "
                            f"({done.stderr.strip() or f'exit status {done.returncode}'})")
    except (OSError, subprocess.SubprocessError) as err:
        return str(err)
    return None
