"""One trial, start to end: the task read and its variables resolved, its image (built once
for all trials), a container, the agent (oracle or model), the verifier, the container
removed. It never raises: a step that fails ends the trial with its ``error_kind`` and why,
and the container goes whatever happened. :meth:`Trials.halt` (the evaluation stopped)
removes every trial's container at once, which ends what runs in it, and the builds, so
the cancelled trials end quickly and leave nothing behind.

The agent never sees the tests: they are in neither the image (the build context is
``environment/``) nor the container until the agent has ended.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..agent.offload import in_thread
from ..environments import ContainerCli, ContainerError, ContainerUnavailable
from ._container import TrialContainer, folder_owner
from ._images import BuildError, Image, ImageCache
from ._model_agent import ModelAgents
from ._oracle import run_oracle
from ._results import AgentRun, ErrorKind, TrialResult, trial_id
from ._step_run import run_steps, trial_fields
from ._steps import Step
from ._task import HarborTask, TaskError, read_task, resolve_env


class _Failed(Exception):
    """A step of the trial failed: the trial ends with ``kind`` and the message."""

    def __init__(self, kind: ErrorKind, why: str):
        super().__init__(why)
        self.kind = kind


@dataclass(frozen=True, slots=True)
class _Env:
    """The task's ``env`` tables with their variables read."""

    environment: Mapping[str, str]
    verifiers: tuple[Mapping[str, str], ...]
    """Each step's."""
    solution: Mapping[str, str]


@dataclass(slots=True)
class _Draft:
    """The result line as the trial fills it in."""

    fields: dict[str, Any]
    clock: float = field(default_factory=time.monotonic)

    def finish(self) -> TrialResult:
        self.fields["wall_s"] = round(time.monotonic() - self.clock, 3)
        self.fields["finished"] = datetime.now(UTC).isoformat()
        return TrialResult(**self.fields)


class Trials:
    """Runs the trials of one evaluation (its container CLI, image cache, model agents;
    ``models`` None: the oracle). ``folder`` holds each trial's files
    (``trials/<task>/<n>/``)."""

    def __init__(self, cli: ContainerCli, images: ImageCache, folder: Path,
                 models: ModelAgents | None, environ: Mapping[str, str] | None = None):
        self.cli, self.images, self.folder, self.models = cli, images, folder, models
        self.environ = os.environ if environ is None else environ
        self._live: dict[str, TrialContainer] = {}
        self._owners: dict[tuple[str, str], tuple[int, int, int] | None] = {}
        self._guard = threading.Lock()
        self._halted = False

    def halt(self) -> None:
        """Stop every trial (blocking): builds end, containers go (what runs in them ends
        with them), and a container starting now goes as soon as it has started."""
        with self._guard:
            self._halted = True
            live = list(self._live.values())
        self.images.halt()
        for container in live:
            container.remove()

    async def run(self, path: Path, index: int) -> TrialResult:
        """Trial ``index`` of the task in ``path``."""
        folder = self.folder / "trials" / path.name / str(index)
        draft = _Draft({"id": trial_id(path.name, index), "task": path.name, "trial": index,
                        "agent": "oracle" if self.models is None else "model",
                        "started": datetime.now(UTC).isoformat()})
        if self.models is not None:
            draft.fields["model"] = self.models.settings(folder).model
        try:
            await self._steps(path, folder, draft)
        except _Failed as failed:
            draft.fields.update(error_kind=failed.kind, error=str(failed))
        return draft.finish()

    async def _steps(self, path: Path, folder: Path, draft: _Draft) -> None:
        task, env = self._read(path)
        if task.network_refusal is not None:
            raise _Failed("environment", task.network_refusal)
        try:
            image = await self.images.image(task.environment)
        except BuildError as err:
            raise _Failed("build", str(err)) from None
        draft.fields.update(image=image.name, image_built=image.built, build_s=image.seconds)
        if folder.exists():  # an earlier attempt that never got its line: afresh
            await in_thread(lambda: shutil.rmtree(folder))
        folder.mkdir(parents=True)
        container = await in_thread(lambda: self._started(task, image, env.environment,
                                                            folder))
        try:
            await self._graded(task, env, container, folder, draft)
        finally:
            await in_thread(container.remove)
            with self._guard:
                self._live.pop(container.id, None)

    def _started(self, task: HarborTask, image: Image, env: Mapping[str, str],
                 folder: Path) -> TrialContainer:
        """The trial's container, known to :meth:`halt` (removed at once where the
        evaluation stopped while it started)."""
        try:
            container = TrialContainer.start(self.cli, image.name, task.environment, env,
                                             folder / "workspace", folder / "logs",
                                             image.info)
        except (ContainerError, ContainerUnavailable) as err:
            raise _Failed("environment", f"the container could not start: {err}") from None
        with self._guard:
            if self._halted:
                container.remove()
                raise _Failed("environment", "the evaluation was stopped")
            self._live[container.id] = container
        if any(step.agent_user or step.verifier_user for step in task.plan()):
            try:
                self._own_workdir(container, image.name)
            except ContainerError as err:
                with self._guard:
                    self._live.pop(container.id, None)
                container.remove()
                raise _Failed("environment", f"the working folder could not be given to "
                                             f"the task's users: {err}") from None
        return container

    def _own_workdir(self, container: TrialContainer, image: str) -> None:
        """The working folder owned as in the image (once looked up per image), for a task
        whose agent or verifier runs as a user of its own."""
        key = (image, container.workdir)
        if key not in self._owners:
            self._owners[key] = folder_owner(self.cli, image, container.workdir)
        found = self._owners[key]
        if found is not None:
            container.own_workdir_as(found)

    def _read(self, path: Path) -> tuple[HarborTask, _Env]:
        try:
            task = read_task(path)
            return task, _Env(
                resolve_env(task.environment.env, self.environ, "[environment] env"),
                tuple(resolve_env(step.verifier_env, self.environ,
                                  f"{f'[[steps]] {step.name}: ' if step.name else ''}"
                                  "[verifier] env") for step in task.plan()),
                resolve_env(task.solution_env, self.environ, "[solution] env"))
        except TaskError as err:
            raise _Failed("task", f"{path}: {err}") from None

    async def _graded(self, task: HarborTask, env: _Env, container: TrialContainer,
                      folder: Path, draft: _Draft) -> None:
        """The task's steps (its one, or its ``[[steps]]``): agent, then verifier, each."""
        async def agent(step: Step, logs: Path) -> AgentRun:
            if self.models is not None:
                return await self.models.run(step, container, folder, logs)
            try:
                return await in_thread(lambda: run_oracle(container, step, env.solution))
            except ContainerError as err:
                return AgentRun("error", error=str(err))

        runs = await run_steps(task.plan(), container, agent, env.verifiers, folder)
        draft.fields.update(trial_fields(runs, task.reward_strategy, bool(task.steps)))

