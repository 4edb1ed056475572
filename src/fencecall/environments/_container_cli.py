"""The container command line (podman or docker) that runs a task's image.

:func:`choose_container_cli` finds the one that answers here: a docker client whose daemon
does not run is on PATH as often as not, so being installed is not enough. Machines differ in
what a container may ask of them, and the CLI says so only when a container starts: podman's
default runtime crun fails where control groups are mounted in hybrid mode, and a machine
without ``CAP_SYS_RESOURCE`` refuses the default file and process limits. The first start
that fails for one of these reasons is tried again with the fix (``--runtime runc``, explicit
``--ulimit``s), which every later call of the same CLI then uses; where no fix is known, the
error says what failed and what would help.

Every container fencecall starts carries :data:`LABEL`, and :data:`OWNER_LABEL` naming the
process that owns it (host, pid and the process's start time, so a reused pid is not taken
for it); :meth:`ContainerCli.sweep` removes those whose owner no longer runs, as the next
start after a ``kill -9`` does.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import socket
import subprocess
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import UserError
from ._bounded import run_bounded

CLIS = ("podman", "docker")
LABEL = "dev.fencecall"
OWNER_LABEL = "dev.fencecall.owner"
START_LABEL = "dev.fencecall.start"
"""A label of each start's own, so that what a failed start left is found alone."""
ANSWER_WITHIN = 20.0
"""Seconds a CLI has to answer ``info`` before it counts as not working."""
_CRUN_CGROUPS = "cgroups in hybrid mode"
_RLIMIT = "rlimit"
"""In what crun ("setrlimit RLIMIT_NOFILE") and runc ("error setting rlimit type 7") say
when the default limits are refused."""
ULIMITS = ("--ulimit", "nofile=1024:1024", "--ulimit", "nproc=1024:1024")
"""Limits a machine without ``CAP_SYS_RESOURCE`` accepts (it cannot raise the defaults)."""
_INITS = {"podman": ("/run/podman-init", "--"), "docker": ("/sbin/docker-init", "-s", "--")}
"""Where each CLI's ``--init`` puts its init (catatonit, tini), and how it runs one command."""
_TAIL = 2000
"""Characters of a failed command's stderr an error keeps."""


class ContainerUnavailable(UserError):
    """No container CLI answers, or a container cannot start here, and why."""


class ContainerError(RuntimeError):
    """A container command failed; the message holds the command and its stderr's tail."""


@dataclass(frozen=True, slots=True)
class ImageInfo:
    """What a start needs of an image: its ID, its ``WORKDIR`` ("/" where it sets none)
    and its ``USER`` ("" where it sets none: root)."""

    id: str
    workdir: str
    user: str


@dataclass(slots=True)
class ContainerCli:
    """One container CLI (``program`` at ``path``) and the flags this machine needs of it:
    ``runtime`` (podman's global ``--runtime``) and ``run_flags`` for each container."""

    program: str
    path: str
    runtime: str | None = None
    run_flags: tuple[str, ...] = ()
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def argv(self, *args: str) -> list[str]:
        """The command line of ``args`` with this machine's global flags."""
        runtime = ["--runtime", self.runtime] if self.runtime and self.program == "podman" \
            else []
        return [self.path, *runtime, *args]

    def call(self, *args: str, timeout: float | None = 120.0,
             check: bool = True) -> subprocess.CompletedProcess[str]:
        """Run ``program args``; :class:`ContainerError` where it fails and ``check``, or
        where it runs past ``timeout``. Of what it prints, each stream's first and last
        :data:`~._bounded.OUTPUT_LIMIT` / 2 bytes are kept, read as they come (a verifier's
        ``exec`` may print gigabytes)."""
        argv = self.argv(*args)
        done = run_bounded(argv, timeout)
        if done.returncode is None:
            raise ContainerError(f"{' '.join(argv[:4])} … took more than {timeout:g} s")
        if check and done.returncode != 0:
            raise ContainerError(f"{' '.join(argv[:4])} … failed (exit status "
                                 f"{done.returncode}): {done.stderr.strip()[-_TAIL:]}")
        return subprocess.CompletedProcess(argv, done.returncode, done.stdout, done.stderr)

    def image_exists(self, image: str) -> bool:
        return self.call("image", "inspect", image, check=False).returncode == 0

    def image_info(self, image: str) -> ImageInfo | None:
        """The image's ID, ``WORKDIR`` and ``USER`` in one ``image inspect``; None where
        there is no such image."""
        done = self.call("image", "inspect", "--format",
                         "{{.Id}}\n{{.Config.WorkingDir}}\n{{.Config.User}}", image,
                         check=False)
        if done.returncode != 0:
            return None
        ident, workdir, user = [*done.stdout.split("\n"), "", ""][:3]
        return ImageInfo(ident.strip(), workdir.strip() or "/", user.strip())

    def start(self, image: str, *, labels: Mapping[str, str] | None = None,
              network: bool = False, workdir: str | None = None,
              mounts: Sequence[tuple[Path, str, bool]] = (), cpus: float | None = None,
              memory_mb: int | None = None, env: Mapping[str, str] | None = None) -> str:
        """Start a container of ``image`` that waits (its entrypoint replaced, an init as its
        pid 1); its id. ``mounts`` are (host folder, container folder, read-only). Without
        ``network`` it has none. Tried again with the machine's fixes where it fails for
        one of the known reasons."""
        start = f"{START_LABEL}={secrets.token_hex(8)}"
        options = ["--detach", "--init", "--label", f"{LABEL}=1", "--label",
                   f"{OWNER_LABEL}={owner()}", "--label", start]
        options += [f"--label={key}={value}" for key, value in (labels or {}).items()]
        if not network:
            options += ["--network", "none"]
        if workdir:
            options += ["--workdir", workdir]
        for host, inside, read_only in mounts:
            options += ["--volume", f"{host}:{inside}{':ro' if read_only else ''}"]
        if cpus:
            options += ["--cpus", f"{cpus:g}"]
        if memory_mb:
            options += ["--memory", f"{memory_mb}m"]
        for key, value in (env or {}).items():
            options += ["--env", f"{key}={value}"]
        return self._started([*options, "--entrypoint", "sleep", image, "infinity"], start)

    def _started(self, options: list[str], start: str) -> str:
        """``run options``, fixed and tried again while it fails for a known reason."""
        while True:
            tried = (self.runtime, self.run_flags)
            done = self.call("run", *self.run_flags, *options, check=False)
            if done.returncode == 0:
                return done.stdout.strip().splitlines()[-1]
            # a start at the same time may have adopted the fix meanwhile: try with it
            if tried == (self.runtime, self.run_flags) and not self._fix(done.stderr):
                raise ContainerUnavailable(
                    f"{self.program} could not start a container: "
                    f"{done.stderr.strip()[-_TAIL:]}")
            # a container may have been created before the runtime failed: this start's
            # alone (another's, created and not yet started, is no leftover)
            self.call("container", "prune", "--force", "--filter", f"label={start}",
                      check=False)

    def _fix(self, stderr: str) -> bool:
        """Adopt the fix for the failure ``stderr`` tells of; False where none is known
        (or it was already adopted)."""
        with self._lock:
            if _CRUN_CGROUPS in stderr and self.program == "podman" and self.runtime is None:
                runc = shutil.which("runc")
                if runc is None:
                    raise ContainerUnavailable(
                        "podman's runtime crun cannot run containers here (control groups "
                        "in hybrid mode); install runc (apt-get install -y runc), which "
                        "fencecall then uses")
                self.runtime = "runc"
                return True
            if _RLIMIT in stderr.lower() and not self.run_flags:
                self.run_flags = ULIMITS
                return True
        return False

    def exec_argv(self, container: str, argv: Sequence[str], *, interactive: bool = False,
                  workdir: str | None = None, env: Mapping[str, str] | None = None,
                  user: str | None = None) -> list[str]:
        """The command line that runs ``argv`` in ``container`` (as ``user``; None: the
        image's)."""
        options = ["--interactive"] if interactive else []
        if user is not None:
            options += ["--user", user]
        if workdir:
            options += ["--workdir", workdir]
        for key, value in (env or {}).items():
            options += ["--env", f"{key}={value}"]
        return self.argv("exec", *options, container, *argv)

    def init_argv(self, root: str | None = None) -> list[str]:
        """The init that ``start``'s ``--init`` puts in every container, as a subreaper for
        one command: the orphans of what that command starts stay below it (not below the
        container's pid 1), so they can be found and stopped with it. Where ``root`` (the
        container's root folder as the host sees it) holds the other CLI's init, that one:
        a ``docker`` may be podman behind (podman-docker), whose containers have podman's."""
        ours = _INITS[self.program]
        if root is not None:
            for init in (ours, *(other for other in _INITS.values() if other != ours)):
                with contextlib.suppress(OSError):
                    if os.path.exists(f"{root}{init[0]}"):
                        return list(init)
        return list(ours)

    def init_pid(self, container: str) -> int:
        """The host pid of ``container``'s pid 1 (every process in it shares its pid
        namespace)."""
        done = self.call("inspect", "--format", "{{.State.Pid}}", container)
        return int(done.stdout.strip())

    def copy_out_of_image(self, image: str, source: str, target: Path) -> None:
        """Copy what folder ``source`` of ``image`` holds into the host folder ``target``,
        from a container created for it and removed at once (nothing runs in it)."""
        created = self.call("create", "--label", f"{LABEL}=1", "--label",
                            f"{OWNER_LABEL}={owner()}", image).stdout.strip().splitlines()[-1]
        try:
            self.call("cp", f"{created}:{source.rstrip('/')}/.", str(target), timeout=600)
        finally:
            self.remove(created)

    def copy_in(self, container: str, source: Path, target: str) -> None:
        self.call("cp", str(source), f"{container}:{target}")

    def copy_out(self, container: str, source: str, target: Path) -> None:
        self.call("cp", f"{container}:{source}", str(target))

    def remove(self, container: str) -> None:
        """Remove ``container`` now, whatever runs in it (killed, not asked to stop)."""
        at_once = ["--time", "0"] if self.program == "podman" else []
        self.call("rm", "--force", *at_once, container, check=False)

    def sweep(self) -> list[str]:
        """Remove the containers of fencecall processes on this host that no longer run
        (killed with ``kill -9``, say); their ids."""
        done = self.call("ps", "--all", "--filter", f"label={LABEL}", "--format",
                         "{{.ID}} {{.Labels}}", check=False)
        stale = [line.split()[0] for line in done.stdout.splitlines()
                 if line.strip() and _owner_gone(line)]
        for container in stale:
            self.remove(container)
        return stale


def choose_container_cli(preferred: str | None = None) -> ContainerCli:
    """The container CLI to use: ``preferred`` (the configuration's ``container_cli``), else
    the first of podman and docker that answers. :class:`ContainerUnavailable` says what was
    tried and why each failed."""
    tried: list[str] = []
    for program in (preferred,) if preferred else CLIS:
        path = shutil.which(program)
        if path is None:
            tried.append(f"{program} is not installed")
            continue
        why = _not_answering(path)
        if why is None:
            return ContainerCli(program, path)
        tried.append(f"{program} is installed but does not answer ({why})")
    raise ContainerUnavailable(
        "no container CLI works here: " + "; ".join(tried) + ". Install podman "
        "(apt-get install -y podman runc), or start docker's daemon")


def _not_answering(path: str) -> str | None:
    """Why the CLI at ``path`` cannot run containers (docker without its daemon, say), or
    None where it answers."""
    try:
        done = subprocess.run([path, "info", "--format", "json"], capture_output=True,
                              text=True, timeout=ANSWER_WITHIN, errors="replace")
    except subprocess.TimeoutExpired:
        return f"'info' took more than {ANSWER_WITHIN:g} s"
    except OSError as err:
        return str(err)
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit status {done.returncode}"
    return None


def owner(pid: int | None = None) -> str:
    """``host:pid:start`` of process ``pid`` (default: this one)."""
    pid = os.getpid() if pid is None else pid
    return f"{socket.gethostname()}:{pid}:{_started_at(pid)}"


def _started_at(pid: int) -> str:
    """When ``pid`` started, in clock ticks since boot ("" where it does not run)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return ""
    return stat[stat.rfind(b")") + 2 :].split()[19].decode()


def _owner_gone(line: str) -> bool:
    """Whether the container of a ``ps`` line (``ID LABELS``) belongs to a fencecall process
    of this host that no longer runs (the same pid started later is another process)."""
    labels = line.split(maxsplit=1)[1] if " " in line.strip() else ""
    found = _label(labels, OWNER_LABEL)
    if found is None:
        return False
    host, _, rest = found.partition(":")
    pid, _, started = rest.partition(":")
    if host != socket.gethostname() or not pid.isdigit():
        return False
    return _started_at(int(pid)) != started


def _label(labels: str, key: str) -> str | None:
    """The value of ``key`` in a ``ps`` line's labels: podman writes ``map[k:v k:v]``,
    docker ``k=v,k=v``."""
    text = labels.strip()
    if text.startswith("{"):
        try:
            found = json.loads(text).get(key)
        except ValueError:
            return None
        return found if isinstance(found, str) else None
    body = text.removeprefix("map[").removesuffix("]")
    for item in body.replace(",", " ").split():
        name, sep, value = item.partition("=" if "=" in item else ":")
        if sep and name == key:
            return value
    return None
