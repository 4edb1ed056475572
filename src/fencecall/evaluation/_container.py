"""A trial's container: started from the task's image with its settings, scripts run in it
as Harbor runs them (``bash -c``, within a timeout), folders copied in, files read back.

Every method blocks (the trial calls them in worker threads). The container waits with its
entrypoint replaced (see :meth:`~fencecall.environments.ContainerCli.start`), carries the
task's name as a label, and is removed when the trial ends, whatever happened.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from ..environments import ContainerCli, ContainerError
from ._task import EnvironmentSpec

TASK_LABEL = "dev.fencecall.eval.task"
LOGS = "/logs"
AGENT_LOGS = "/logs/agent"
VERIFIER_LOGS = "/logs/verifier"


@dataclass(frozen=True, slots=True)
class Ran:
    """How a script in the container ended: its exit status, or None when it ran past its
    timeout (its ``podman exec`` was ended; the container is removed at the trial's end)."""

    exit_status: int | None
    output: str = ""

    @property
    def timed_out(self) -> bool:
        return self.exit_status is None


@dataclass(frozen=True, slots=True)
class TrialContainer:
    """A running container of a trial, and the folder its agent works in."""

    cli: ContainerCli
    id: str
    workdir: str

    @classmethod
    def start(cls, cli: ContainerCli, image: str, spec: EnvironmentSpec,
              env: Mapping[str, str], task: str) -> TrialContainer:
        """Start a container of ``image`` with the task's network, resources, working
        folder (its ``workdir``, else the image's ``WORKDIR``) and ``env``; the folders
        Harbor's scripts write their logs in are made."""
        workdir = spec.workdir or cli.image_workdir(image)
        container = cli.start(image, labels={TASK_LABEL: task}, network=spec.network,
                              workdir=workdir, cpus=spec.cpus, memory_mb=spec.memory_mb,
                              env=env)
        made = cls(cli, container, workdir)
        try:
            made.as_root(f"mkdir -p {AGENT_LOGS} {VERIFIER_LOGS} {shlex.quote(workdir)}")
        except BaseException:
            made.remove()
            raise
        return made

    def run(self, script: str, *, timeout: float | None, env: Mapping[str, str] | None = None
            ) -> Ran:
        """``bash -c script`` in the working folder; what it printed (stdout and stderr)."""
        options = ["--workdir", self.workdir]
        for key, value in (env or {}).items():
            options += ["--env", f"{key}={value}"]
        try:
            done = self.cli.call("exec", *options, self.id, "bash", "-c", script,
                                 timeout=timeout, check=False)
        except ContainerError:  # the call's only failure unchecked: its timeout
            return Ran(None)
        return Ran(done.returncode, done.stdout + done.stderr)

    def as_root(self, script: str) -> None:
        """``script`` as root (making folders, setting modes); ContainerError where it
        fails."""
        self.cli.call("exec", "--user", "root", self.id, "bash", "-c", script)

    def copy_folder(self, source: Path, target: str) -> None:
        """``source``'s contents into ``target`` (made if missing), as Harbor uploads a
        folder."""
        self.as_root(f"mkdir -p {shlex.quote(target)}")
        self.cli.call("cp", f"{source}/.", f"{self.id}:{target}")

    def read(self, path: str, limit: int | None = None) -> str | None:
        """The text of ``path`` in the container (its last ``limit`` characters), or None
        where there is no such file."""
        done = self.cli.call("exec", self.id, "bash", "-c",
                             f"test -f {shlex.quote(path)} && cat {shlex.quote(path)}",
                             check=False)
        if done.returncode != 0:
            return None
        return done.stdout if limit is None else done.stdout[-limit:]

    def remove(self) -> None:
        self.cli.remove(self.id)
