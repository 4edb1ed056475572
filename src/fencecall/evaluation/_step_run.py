"""A trial's steps, run one after another in its container as Harbor runs them, and the
trial's result fields made of theirs.

Before each step after the first, the tests and the logs of the one before go; the step's
``workdir/`` is copied into the working folder and its ``setup.sh`` run there (as the
agent's user); then the agent, then the verifier. A step that fails (its setup, agent or
verifier) ends the trial there with that error, and so does one whose rewards miss its
``min_reward`` (without an error: the steps after it simply do not run). The trial's
rewards are the steps' as the task's ``multi_step_reward_strategy`` says; its agent's time,
replies, tokens and cost are the steps' summed, its outcome and logs the last step's.
"""

from __future__ import annotations

import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..agent.offload import in_thread
from ..environments import ContainerError
from ._container import TrialContainer
from ._results import AgentRun, ErrorKind
from ._steps import Step, below, mean_or_final
from ._verifier import OUTPUT_TAIL, Verdict, primary, verify

StepAgent = Callable[[Step, Path], Awaitable[AgentRun]]
"""The trial's agent (oracle or model) on a step, logging in the given folder."""


@dataclass(frozen=True, slots=True)
class StepRun:
    """How one step went: its agent's run and verdict where they happened, or its error."""

    step: Step
    agent: AgentRun | None = None
    verdict: Verdict | None = None
    error_kind: ErrorKind | None = None
    error: str | None = None

    @property
    def rewards(self) -> Mapping[str, float] | None:
        return None if self.verdict is None else self.verdict.rewards

    def record(self) -> dict[str, Any]:
        """The step's entry in its trial's ``step_results``."""
        agent, verdict = self.agent, self.verdict
        return {"name": self.step.name,
                "agent_outcome": agent and agent.outcome, "agent_exit": agent and agent.exit_status,
                "agent_s": agent.seconds if agent else 0.0, "steps": agent.steps if agent else 0,
                "reward": verdict and verdict.reward, "rewards": verdict and verdict.rewards,
                "verifier_exit": verdict and verdict.exit_status,
                "verifier_output": verdict and verdict.output,
                "verifier_s": verdict.seconds if verdict else 0.0,
                "error_kind": self.error_kind, "error": self.error,
                "log": agent and agent.log, "trajectory": agent and agent.trajectory}


async def run_steps(steps: Sequence[Step], container: TrialContainer, agent: StepAgent,
                    verifier_envs: Sequence[Mapping[str, str]], folder: Path) -> list[StepRun]:
    """The ``steps`` (with each one's resolved verifier env) up to the first that fails or
    misses its ``min_reward``; a named step logs in ``folder/steps/NAME``."""
    runs: list[StepRun] = []
    for index, step in enumerate(steps):
        logs = folder if step.name is None else folder / "steps" / step.name
        run = await _step(step, container, agent, verifier_envs[index], logs, index > 0)
        runs.append(run)
        if run.error is not None or below(run.rewards, step.min_reward):
            break
    return runs


async def _step(step: Step, container: TrialContainer, agent: StepAgent,
                env: Mapping[str, str], logs: Path, after_another: bool) -> StepRun:
    try:
        if after_another:
            await in_thread(container.next_step)
        failed = await in_thread(lambda: _prepared(container, step))
    except ContainerError as err:
        return StepRun(step, error_kind="environment", error=str(err))
    if failed is not None:
        return StepRun(step, error_kind="environment", error=failed)
    logs.mkdir(parents=True, exist_ok=True)
    ran = await agent(step, logs)
    if ran.error is not None:
        return StepRun(step, ran, error_kind="agent", error=ran.error)
    try:
        verdict = await in_thread(lambda: verify(container, step, env))
    except ContainerError as err:
        return StepRun(step, ran, error_kind="verifier", error=str(err))
    return StepRun(step, ran, verdict, "verifier" if verdict.error else None, verdict.error)


def _prepared(container: TrialContainer, step: Step) -> str | None:
    """The step's ``workdir/`` in the working folder, its ``setup.sh`` run there; why that
    failed (None: it did not)."""
    if step.workdir is None:
        return None
    container.copy_folder(step.workdir, container.workdir)
    if not (step.workdir / "setup.sh").is_file():
        return None
    script = f"{container.workdir.rstrip('/')}/setup.sh"
    ran = container.run(f"bash {shlex.quote(script)}", timeout=None, user=step.agent_user)
    if ran.exit_status == 0:
        return None
    return f"setup.sh exited with status {ran.exit_status}: {ran.output[-OUTPUT_TAIL:]}"


def trial_fields(runs: Sequence[StepRun], strategy: str, named: bool) -> dict[str, Any]:
    """The trial's result fields from its steps' runs (``named``: a multi-step task, whose
    steps are listed in ``step_results`` and named in its error)."""
    agents = [run.agent for run in runs if run.agent is not None]
    verdicts = [run.verdict for run in runs if run.verdict is not None]
    rewards = mean_or_final([run.rewards for run in runs], strategy)
    fields: dict[str, Any] = {"reward": primary(rewards), "rewards": rewards,
                              "agent_s": round(sum(a.seconds for a in agents), 3),
                              "steps": sum(a.steps for a in agents),
                              "verifier_s": round(sum(v.seconds for v in verdicts), 3)}
    if agents:
        last = agents[-1]
        fields.update(agent_outcome=last.outcome, agent_exit=last.exit_status, log=last.log,
                      trajectory=last.trajectory, cost_usd=_cost(agents),
                      tokens={kind: sum(a.tokens.get(kind, 0) for a in agents)
                              for kind in dict.fromkeys(k for a in agents for k in a.tokens)})
    if verdicts:
        fields.update(verifier_exit=verdicts[-1].exit_status,
                      verifier_output=verdicts[-1].output)
    failed = next((run for run in runs if run.error is not None), None)
    if failed is not None:
        fields.update(error_kind=failed.error_kind, error=failed.error if not named
                      else f"step {failed.step.name}: {failed.error}")
    if named:
        fields["step_results"] = [run.record() for run in runs]
    return fields


def _cost(agents: Sequence[AgentRun]) -> str | None:
    """The steps' cost summed; None where any step's is unknown."""
    if any(agent.cost_usd is None for agent in agents):
        return None
    return str(sum((Decimal(str(agent.cost_usd)) for agent in agents), Decimal(0)))
