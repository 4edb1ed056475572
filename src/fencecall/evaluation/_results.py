"""One line per trial in the results file: what ran, what it cost, what the verifier said.

The file is a batch results file (:class:`~fencecall.batch.ResultFile`: fsynced lines,
torn last line set aside, locked while written), keyed by ``id`` = ``TASK#TRIAL``, so a
rerun with the same ``--out`` skips the trials already there.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, get_args

ErrorKind = Literal["task", "build", "environment", "agent", "verifier"]
ERROR_KINDS: tuple[ErrorKind, ...] = get_args(ErrorKind)
"""Where a trial could not run: its task.toml or env (task), its image (build), its
container (environment), the agent (it could not start, or its model failed), the verifier
(no reward)."""


def trial_id(task: str, index: int) -> str:
    return f"{task}#{index}"


@dataclass(frozen=True, slots=True)
class AgentRun:
    """How the agent's part of a trial ended. ``outcome`` is the model run's (``done``,
    ``step-limit``, ``timeout``, …) or the oracle's (``done``, ``failed``: solve.sh exited
    non-zero, ``timeout``); ``error`` is set where it could not run at all."""

    outcome: str
    seconds: float = 0.0
    exit_status: int | None = None
    error: str | None = None
    steps: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)
    cost_usd: str | None = None
    log: str | None = None
    trajectory: str | None = None


@dataclass(frozen=True, slots=True)
class TrialResult:
    """A line of the results file (:meth:`record`)."""

    id: str
    task: str
    trial: int
    agent: str
    """``oracle``, or ``model`` (the model is in :attr:`model`)."""
    model: str | None = None
    reward: float | None = None
    """The primary reward (``reward``); None where the trial got none (see ``error``)."""
    rewards: Mapping[str, float] | None = None
    agent_outcome: str | None = None
    agent_exit: int | None = None
    verifier_exit: int | None = None
    verifier_output: str | None = None
    """The tail of what the tests printed."""
    error_kind: ErrorKind | None = None
    error: str | None = None
    """Why the trial could not run (a build's error ends with its log's tail)."""
    steps: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)
    cost_usd: str | None = None
    image: str | None = None
    image_built: bool = False
    build_s: float = 0.0
    agent_s: float = 0.0
    verifier_s: float = 0.0
    wall_s: float = 0.0
    log: str | None = None
    trajectory: str | None = None
    """For a model trial: its trajectory in ATIF."""
    started: str | None = None
    finished: str | None = None
    step_results: list[Mapping[str, Any]] | None = None
    """For a multi-step task: each step that ran (its agent, rewards, verifier, error)."""

    @property
    def ran(self) -> bool:
        """Whether the trial ran to a reward (whatever its value)."""
        return self.error_kind is None

    def record(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TrialResult:
        return cls(**{name: record[name] for name in cls.__dataclass_fields__
                      if name in record})
