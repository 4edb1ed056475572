"""A trial's container: the place its agent's tools run (a
:class:`~fencecall.environments.ContainerEnvironment` of the task's image, its working
folder held in the trial's ``workspace`` folder, its ``/logs/agent`` and ``/logs/verifier``
in its ``logs``), and where the oracle's and the verifier's scripts run as Harbor runs them
(``bash -c``, within a timeout), folders are copied in and files read back.

Every method blocks (the trial calls them in worker threads). The container is removed
when the trial ends, whatever happened.
"""

from __future__ import annotations

import io
import secrets
import shlex
import shutil
import subprocess
import tarfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from ..environments import (
    LABEL,
    OWNER_LABEL,
    ContainerCli,
    ContainerEnvironment,
    ContainerError,
    ImageInfo,
    owner,
)
from ..environments._bounded import run_bounded
from ..sandbox import make_scratch
from ._task import EnvironmentSpec

AGENT_LOGS = "/logs/agent"
VERIFIER_LOGS = "/logs/verifier"
_KILL_AFTER = 5
"""Seconds a script past its timeout has between TERM and KILL."""
_TIMED_OUT = (124, 137)
"""``timeout``'s exit status when it stopped the script (TERM, then KILL)."""


@dataclass(frozen=True, slots=True)
class Ran:
    """How a script in the container ended: its exit status, or None when it ran past its
    timeout."""

    exit_status: int | None
    output: str = ""

    @property
    def timed_out(self) -> bool:
        return self.exit_status is None


@dataclass(frozen=True, slots=True)
class TrialContainer:
    """A running container of a trial (``place``), the image it is of, the host folder
    mounted at ``/logs``'s ``agent`` and ``verifier``, and the task's ``[environment]
    env``, which every script here gets."""

    place: ContainerEnvironment
    image: str
    logs: Path
    env: Mapping[str, str] = field(default_factory=dict)

    @property
    def cli(self) -> ContainerCli:
        return self.place.cli

    @property
    def id(self) -> str:
        return self.place.container

    @property
    def workdir(self) -> str:
        return self.place.workdir

    @classmethod
    def start(cls, cli: ContainerCli, image: str, spec: EnvironmentSpec,
              env: Mapping[str, str], files: Path, logs: Path, info: ImageInfo | None = None
              ) -> TrialContainer:
        """Start a container of ``image`` with the task's network, resources and working
        folder (its ``workdir``, else the image's ``WORKDIR``), held in the host folder
        ``files`` (``info``: the image's, where the caller has it). The folders Harbor's
        scripts write their logs in are the host folder ``logs``'s ``agent`` and
        ``verifier``, mounted there as Harbor mounts them, writable by whichever user the
        agent and the verifier run as: what they write is in the trial's folder as it is
        written, with no ``mkdir`` in the container first nor ``cp`` out at the end."""
        mounts = []
        for inside in (AGENT_LOGS, VERIFIER_LOGS):
            host = logs / inside.rpartition("/")[2]
            host.mkdir(parents=True, exist_ok=True)
            host.chmod(0o777)
            mounts.append((host, inside))
        place = ContainerEnvironment.start(image, files, cli=cli, workdir=spec.workdir,
                                           network=spec.network, cpus=spec.cpus,
                                           memory_mb=spec.memory_mb, env=env, info=info,
                                           mounts=mounts)
        return cls(place, image, logs, dict(env))

    def run(self, script: str, *, timeout: float | None, env: Mapping[str, str] | None = None,
            user: str | None = None) -> Ran:
        """``bash -c script`` in the working folder, as ``user`` (None: the image's
        ``USER``); what it printed (stdout and stderr). Past ``timeout`` its whole process
        group is killed in the container, by the image's ``timeout`` where it has one (GNU's
        and busybox's signal the group), so nothing it started goes on changing what the
        verifier grades; else only its ``exec`` ends. The ``exec`` has a session of its
        own: a terminal's Ctrl-C reaches fencecall alone, which removes the container. Of
        what it prints, each stream's head and tail are kept as it comes (a ``setup.sh``
        may print gigabytes)."""
        options = ["--workdir", self.workdir, *(["--user", user] if user is not None else [])]
        for key, value in {**self.env, **(env or {})}.items():
            options += ["--env", f"{key}={value}"]
        argv = self.cli.argv("exec", *options, self.id, "bash", "-c", _bounded(script, timeout))
        clock = time.monotonic()
        done = run_bounded(argv, None if timeout is None else timeout + _KILL_AFTER + 5)
        if done.returncode is None:
            return Ran(None)
        if timeout is not None and done.returncode in _TIMED_OUT \
                and time.monotonic() - clock >= timeout:
            return Ran(None, done.stdout + done.stderr)
        return Ran(done.returncode, done.stdout + done.stderr)

    def agent_place(self, user: str | None) -> ContainerEnvironment:
        """The container as the agent's tools run in it: as ``user`` (the task's ``[agent]
        user``; None: the image's). ContainerError, saying so, where it has no such user."""
        if user is None:
            return self.place
        try:
            return self.place.as_user(user)
        except ContainerError as err:
            raise ContainerError(f"[agent] user: {err}") from None

    def own_workdir_as(self, owner: tuple[int, int, int]) -> None:
        """The working folder (a host folder mounted there) given the image's folder's
        ``owner`` (uid, gid, mode), so a task's users may write there as in the image."""
        uid, gid, mode = owner
        folder = shlex.quote(self.workdir)
        self.as_root(f"chown {uid}:{gid} {folder} && chmod {mode:o} {folder}")

    def next_step(self) -> None:
        """Between two steps of a task, as Harbor does: the tests and what the verifier and
        the agent wrote in ``/logs`` go, so the next agent sees none of them."""
        self.as_root(f"rm -rf /tests && find {AGENT_LOGS} {VERIFIER_LOGS} -mindepth 1 -delete")

    def remove_logs(self, *paths: str) -> None:
        """Remove the files ``paths`` (in ``/logs/agent`` or ``/logs/verifier``; a symlink
        itself, never what it names) where they are mounted from, on the host: no
        ``exec``. ContainerError where one cannot go (a folder of that name)."""
        for path in paths:
            try:
                (self.logs / PurePosixPath(path).relative_to("/logs")).unlink()
            except FileNotFoundError:
                pass
            except OSError as err:
                raise ContainerError(f"{path} could not be removed: {err}") from None

    def as_root(self, script: str) -> None:
        """``script`` as root (making folders, setting modes); ContainerError where it
        fails."""
        self.cli.call("exec", "--user", "root", self.id, "bash", "-c", script)

    def copy_folder(self, source: Path, target: str) -> None:
        """``source``'s contents into ``target`` (made if missing), as Harbor uploads a
        folder."""
        self.as_root(f"mkdir -p {shlex.quote(target)}")
        self.cli.call("cp", f"{source}/.", f"{self.id}:{target}")

    def upload(self, sources: Sequence[Path], target: str, script: str) -> None:
        """The ``sources``' contents (a later one's on top) into ``target`` with its
        ``script`` executable, as Harbor uploads a folder and ``chmod +x``es the script it
        runs: one ``cp`` of a copy staged on the host (``target`` made if missing, mode
        755, as root's ``mkdir -p`` made it), where a ``mkdir`` and a ``chmod`` in the
        container took an ``exec`` each."""
        stage = make_scratch("upload")
        try:
            for source in sources:
                shutil.copytree(source, stage, symlinks=True, dirs_exist_ok=True)
            stage.chmod(0o755)
            runs = stage / script
            if runs.is_file() and not runs.is_symlink():
                runs.chmod(runs.stat().st_mode | 0o111)
            self.cli.call("cp", f"{stage}/.", f"{self.id}:{target}")
        finally:
            shutil.rmtree(stage, ignore_errors=True)

    def read(self, paths: Mapping[str, int]) -> dict[str, str | None]:
        """The text of each of ``paths`` in the container (at most its last ``paths[path]``
        bytes), None where there is no such file; all in one ``exec``. Each is framed by a
        line of a boundary chosen for this call, which nothing that wrote the files knew:
        none of them can pass for another's, or for a file that is not there."""
        mark = secrets.token_hex(16)
        script = "; ".join(
            f"if test -f {shlex.quote(path)}; then printf '\\n{mark} +\\n'; "
            f"tail -c {limit} {shlex.quote(path)}; else printf '\\n{mark} -\\n'; fi"
            for path, limit in paths.items())
        done = self.cli.call("exec", self.id, "bash", "-c", script, check=False)
        parts = done.stdout.split(f"\n{mark} ")[1:]
        if len(parts) != len(paths):
            return dict.fromkeys(paths)
        return {path: part[2:] if part.startswith("+\n") else None
                for path, part in zip(paths, parts, strict=True)}

    def remove(self) -> None:
        self.place.close()


def _bounded(script: str, timeout: float | None) -> str:
    """``script`` for ``bash -c``, under the container's ``timeout`` where it has one."""
    if timeout is None:
        return script
    quoted = shlex.quote(script)
    return (f"if command -v timeout >/dev/null 2>&1; then exec timeout -k {_KILL_AFTER} "
            f"{timeout:g} bash -c {quoted}; else exec bash -c {quoted}; fi")


def folder_owner(cli: ContainerCli, image: str, folder: str) -> tuple[int, int, int] | None:
    """The uid, gid and mode ``folder`` has in ``image`` (read from the archive of a
    container created for it and removed at once; nothing runs), or None where it has no
    such folder."""
    created = cli.call("create", "--label", f"{LABEL}=1", "--label", f"{OWNER_LABEL}={owner()}",
                       image).stdout.strip().splitlines()[-1]
    try:
        done = subprocess.run(cli.argv("cp", f"{created}:{folder.rstrip('/') or '/'}", "-"),
                              capture_output=True, timeout=600, check=False)
    finally:
        cli.remove(created)
    try:
        with tarfile.open(fileobj=io.BytesIO(done.stdout), mode="r|") as archive:
            first = next(iter(archive), None)
    except tarfile.TarError:
        return None
    return None if first is None or not first.isdir() else (first.uid, first.gid,
                                                             first.mode & 0o7777)
