"""``--agent oracle``: the task's own solution in place of a model, to check a task set
(every task should then get its full reward). As Harbor's oracle does, ``solution/`` is
copied to ``/solution`` and ``solve.sh`` runs in the working folder with the task's
``[solution] env``, its output in ``/logs/agent/oracle.txt``, within the agent's timeout."""

from __future__ import annotations

import time
from collections.abc import Mapping

from ._container import AGENT_LOGS, TrialContainer
from ._results import AgentRun
from ._task import HarborTask

SOLUTION = "/solution"
ORACLE_LOG = f"{AGENT_LOGS}/oracle.txt"


def run_oracle(container: TrialContainer, task: HarborTask, env: Mapping[str, str]) -> AgentRun:
    """Run the task's ``solve.sh`` in ``container`` (blocking)."""
    clock = time.monotonic()
    if not (task.solution / "solve.sh").is_file():
        return AgentRun("error", error=f"{task.solution}/solve.sh does not exist")
    container.copy_folder(task.solution, SOLUTION)
    container.as_root(f"chmod +x {SOLUTION}/solve.sh")
    ran = container.run(f"({SOLUTION}/solve.sh) > {ORACLE_LOG} 2>&1",
                        timeout=task.agent_timeout,
                        env={"DEBIAN_FRONTEND": "noninteractive", **env})
    seconds = round(time.monotonic() - clock, 3)
    if ran.timed_out:
        return AgentRun("timeout", seconds)
    return AgentRun("done" if ran.exit_status == 0 else "failed", seconds,
                    exit_status=ran.exit_status)
