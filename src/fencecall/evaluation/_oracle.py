"""``--agent oracle``: the task's own solution in place of a model, to check a task set
(every task should then get its full reward). As Harbor's oracle does, ``solution/`` is
copied to ``/solution`` and ``solve.sh`` runs in the working folder as the agent's user
with the task's ``[solution] env``, its output in ``/logs/agent/oracle.txt``, within the
agent's timeout; in a multi-step task, each step's own ``solution/`` where it has one. A
user the image does not have is the trial's ``agent`` error, as for a model."""

from __future__ import annotations

import time
from collections.abc import Mapping

from ._container import AGENT_LOGS, TrialContainer
from ._results import AgentRun
from ._steps import Step

SOLUTION = "/solution"
ORACLE_LOG = f"{AGENT_LOGS}/oracle.txt"


def run_oracle(container: TrialContainer, step: Step, env: Mapping[str, str]) -> AgentRun:
    """Run the step's ``solve.sh`` in ``container`` (blocking); ContainerError where it
    cannot (the agent's user is not in the image)."""
    clock = time.monotonic()
    if not (step.solution / "solve.sh").is_file():
        return AgentRun("error", error=f"{step.solution}/solve.sh does not exist")
    container.agent_place(step.agent_user)  # a user the image lacks: ContainerError
    container.as_root(f"rm -rf {SOLUTION}")
    container.upload([step.solution], SOLUTION, "solve.sh")
    ran = container.run(f"({SOLUTION}/solve.sh) > {ORACLE_LOG} 2>&1",
                        timeout=step.agent_timeout, user=step.agent_user,
                        env={"DEBIAN_FRONTEND": "noninteractive", **env})
    seconds = round(time.monotonic() - clock, 3)
    if ran.timed_out:
        return AgentRun("timeout", seconds)
    return AgentRun("done" if ran.exit_status == 0 else "failed", seconds,
                    exit_status=ran.exit_status)
