"""Evaluations on Harbor tasks: ``fencecall eval`` and its Python API.

::

    from fencecall.batch import ResultFile
    from fencecall.evaluation import EvalOptions, TrialResult, find_tasks, run_eval, summarize

    options = EvalOptions(Path("runs/1"), trials=2)   # the oracle; models=ModelAgents(...)
    with ResultFile(Path("runs/1/results.jsonl")) as out:
        run_eval(find_tasks([Path("tasks")]), options, out)
        print(summarize(TrialResult.from_record(r) for r in out.records.values()).table())

Modules, one job each: :mod:`._task` (a task folder, read as Harbor reads it),
:mod:`._images` (images built once, keyed by their context), :mod:`._container` (a trial's
container), :mod:`._oracle` and :mod:`._model_agent` (the agents), :mod:`._verifier` (tests
and rewards), :mod:`._trial` (one trial), :mod:`._run` (all of them at once), :mod:`._ray`
(shards of them on Ray), :mod:`._results` (a result line) and :mod:`._summary` (the table
at the end).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._images import TAG, BuildError, ImageCache, context_key
    from ._model_agent import ModelAgents
    from ._ray import run_eval_ray
    from ._results import ERROR_KINDS, AgentRun, ErrorKind, TrialResult, trial_id
    from ._run import EvalOptions, evaluate, planned, run_eval
    from ._summary import Summary, pass_at_k, summarize
    from ._task import EnvironmentSpec, HarborTask, TaskError, find_tasks, read_task, resolve_env
    from ._verifier import RewardError, read_rewards
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._images": ("TAG", "BuildError", "ImageCache", "context_key"),
        "._model_agent": ("ModelAgents",),
        "._ray": ("run_eval_ray",),
        "._results": ("ERROR_KINDS", "AgentRun", "ErrorKind", "TrialResult", "trial_id"),
        "._run": ("EvalOptions", "evaluate", "planned", "run_eval"),
        "._summary": ("Summary", "pass_at_k", "summarize"),
        "._task": ("EnvironmentSpec", "HarborTask", "TaskError", "find_tasks", "read_task",
                   "resolve_env"),
        "._verifier": ("RewardError", "read_rewards"),
    })

__all__ = [
    "ERROR_KINDS",
    "TAG",
    "AgentRun",
    "BuildError",
    "EnvironmentSpec",
    "ErrorKind",
    "EvalOptions",
    "HarborTask",
    "ImageCache",
    "ModelAgents",
    "RewardError",
    "Summary",
    "TaskError",
    "TrialResult",
    "context_key",
    "evaluate",
    "find_tasks",
    "pass_at_k",
    "planned",
    "read_rewards",
    "read_task",
    "resolve_env",
    "run_eval",
    "run_eval_ray",
    "summarize",
    "trial_id",
]
