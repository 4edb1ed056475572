"""A model as a trial's agent: the task's instruction as its prompt, its tools (the
configuration's, or ``--tools``) working in the trial's container, unasked (the container is
the boundary, and nobody is there to confirm), its conversation logged in the trial's folder
(``conversation.jsonl``; a step's in ``steps/NAME/``) and exported as an ATIF trajectory
(``trajectory.json``) when it ends. Where the task's agent runs as a user of its own
(``[agent] user``), so do its tools: its shell, python and background jobs run as that user
in the container, and the files its file tools make are that user's (see
:meth:`~fencecall.environments.ContainerEnvironment.as_user`); a user the image does not
have is the trial's ``agent`` error.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .. import assembly
from ..agent import Agent, Conversation
from ..agent.offload import in_thread
from ..agent.stats import TOKEN_KINDS, collect
from ..assembly import Overrides, RunSettings, resolve_settings
from ..config import Config
from ..environments import ContainerEnvironment, ContainerError
from ..execution import Session, auto_yes
from ..export import export
from ..message import Outcome
from ..providers import Provider, ProviderError
from ._container import TrialContainer
from ._results import AgentRun
from ._steps import Step

TRAJECTORY = "trajectory.json"


def container_session(settings: RunSettings, config: Config, place: ContainerEnvironment,
                      secrets: Mapping[str, str]) -> Session:
    """The session of a model trial: its tools run in ``place`` (the trial's container,
    which the trial removes, as the agent's user), every call unasked."""
    return assembly.tool_session(settings, config, confirm=auto_yes, secrets=secrets,
                                 warn=lambda warning: None, environment=place)


@dataclass(slots=True)
class ModelAgents:
    """Runs model trials with one run's settings (``overrides``: the model, its limits,
    format), sharing each model's provider, so its connections and rate limits are one."""

    config: Config
    overrides: Overrides
    secrets: Mapping[str, str]
    _providers: dict[str, Provider] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def __reduce__(self) -> tuple[type[ModelAgents], tuple[Config, Overrides, Mapping[str, str]]]:
        """Sent to a Ray worker as its settings: it makes its own providers."""
        return ModelAgents, (self.config, self.overrides, self.secrets)

    def settings(self, folder: Path, image: str | None = None) -> RunSettings:
        """A trial's settings: its tools in a container of ``image`` whose working folder
        is held in ``folder``'s ``workspace``."""
        return resolve_settings(self.config, Overrides(
            workspace=folder / "workspace",
            environment=None if image is None else f"container:{image}"), self.overrides)

    async def run(self, step: Step, container: TrialContainer, folder: Path,
                  logs: Path) -> AgentRun:
        """The model's run on ``step`` within its agent timeout in the trial's container
        (working folder held in ``folder``), logged in ``logs``; never raises."""
        clock = time.monotonic()
        settings = self.settings(folder, container.image)
        if settings.model is None:
            return AgentRun("error", error="no model: pass --model or --agent oracle")
        try:
            place = await in_thread(lambda: container.agent_place(step.agent_user))
        except ContainerError as err:
            return AgentRun("error", error=str(err))
        try:
            agent = await in_thread(lambda: self._agent(settings, container, place, logs))
        except Exception as err:
            return AgentRun("error", error=f"the agent could not start: {err}")
        try:
            outcome, error = await _driven(agent, step)
        except Exception as err:
            outcome, error = Outcome.ERROR, f"{type(err).__name__}: {err}"
        finally:
            await in_thread(agent.session.close)
            agent.conversation.close()
        return self._ended(agent, outcome, error, time.monotonic() - clock)

    def _agent(self, settings: RunSettings, container: TrialContainer,
               place: ContainerEnvironment, folder: Path) -> Agent:
        model = str(settings.model)
        with self._lock:  # trials start together; one provider per model
            if model not in self._providers:
                self._providers[model] = assembly.provider(settings, self.config,
                                                           self.secrets)
        session = container_session(settings, self.config, place, self.secrets)
        conversation = Conversation(folder, synced=False)
        conversation.remember({"model": model, "format": settings.format.name,
                               "tools": list(session.toolchain.names()),
                               "workspace": container.workdir, "container": container.id})
        return assembly.agent(settings, self.config, self._providers[model], session,
                              conversation, secrets=self.secrets)

    def _ended(self, agent: Agent, outcome: Outcome, error: str | None,
               seconds: float) -> AgentRun:
        """The run's record: its tokens and cost as ``fencecall stats`` counts them, and
        its trajectory."""
        messages = agent.conversation.messages
        stats = collect([messages], lambda key: self.config.model_settings(key).price)
        tokens = {kind: sum(entry.tokens[kind] for entry in stats.models.values())
                  for kind in TOKEN_KINDS}
        trajectory = None
        if agent.conversation.folder is not None:
            trajectory = agent.conversation.folder / TRAJECTORY
            trajectory.write_text(export(agent.conversation, "atif", lambda key: (
                self.config.model_settings(key).price)), encoding="utf-8")
        path = agent.conversation.path
        return AgentRun(outcome.value, round(seconds, 3), error=error,
                        steps=sum(1 for m in messages if m.role == "assistant"), tokens=tokens,
                        cost_usd=None if stats.cost is None else str(stats.cost),
                        log=None if path is None else str(path),
                        trajectory=None if trajectory is None else str(trajectory))

    async def aclose(self) -> None:
        for provider in self._providers.values():
            closing = getattr(provider, "aclose", None)
            if callable(closing):
                await closing()


async def _driven(agent: Agent, step: Step) -> tuple[Outcome, str | None]:
    """The agent's outcome on the step's instruction, and what went wrong where it could
    not go on (its model's server failed); ``timeout`` past the step's agent timeout."""
    try:
        outcome = await asyncio.wait_for(agent.asend(step.instruction), step.agent_timeout)
    except TimeoutError:
        return Outcome.TIMEOUT, None
    except ProviderError as err:
        return Outcome.ERROR, str(err)
    if outcome in (Outcome.ERROR, Outcome.INTERRUPTED):
        messages = agent.conversation.messages
        return Outcome.ERROR, messages[-1].content if messages else "the run failed"
    return outcome, None
