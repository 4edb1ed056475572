"""Many independent agent sessions at once: ``fencecall batch`` and its Python API.

::

    from fencecall.batch import BatchOptions, load_tasks, run_batch

    options = BatchOptions(load_config(), folder=Path("runs/1"), concurrency=50, yes=True)
    for result in run_batch(load_tasks(Path("tasks.jsonl")), options,
                            out=Path("runs/1/results.jsonl")):
        print(result.id, result.status, result.steps, result.tokens)

Modules, one job each: :mod:`._tasks` (the JSONL tasks), :mod:`._task_workspace` (a task's own
copy, and its diff), :mod:`._runner` (one task), :mod:`._results` (the append-only results and
resuming), :mod:`._scheduler` (asyncio over worker threads), :mod:`.ray_backend` (shards on
Ray) and :mod:`.progress` (what the terminal shows).
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._results import STATUSES, ResultFile, ResultFileError, TaskResult, ToolCallRecord
    from ._runner import BatchOptions, Stop, TaskRunner
    from ._scheduler import (
        BatchEvent,
        BatchInterrupted,
        TaskStarted,
        batch_events,
        run_batch,
        run_events,
    )
    from ._tasks import Task, TaskError, WorkspaceSpec, load_tasks, parse_tasks
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._results": ("STATUSES", "ResultFile", "ResultFileError", "TaskResult", "ToolCallRecord"),
        "._runner": ("BatchOptions", "Stop", "TaskRunner"),
        "._scheduler": ("BatchEvent", "BatchInterrupted", "TaskStarted", "batch_events",
                        "run_batch", "run_events"),
        "._tasks": ("Task", "TaskError", "WorkspaceSpec", "load_tasks", "parse_tasks"),
    })

__all__ = [
    "STATUSES",
    "BatchEvent",
    "BatchInterrupted",
    "BatchOptions",
    "ResultFile",
    "ResultFileError",
    "Stop",
    "Task",
    "TaskError",
    "TaskResult",
    "TaskRunner",
    "TaskStarted",
    "ToolCallRecord",
    "WorkspaceSpec",
    "batch_events",
    "load_tasks",
    "parse_tasks",
    "run_batch",
    "run_events",
]
