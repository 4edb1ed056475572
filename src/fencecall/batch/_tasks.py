"""Batch tasks: what one line of a tasks file holds, read and checked before anything runs.

A tasks file is JSONL, one object per line (blank lines are skipped)::

    {"id": "fix-1", "prompt": "make the tests pass", "workspace": "repos/app",
     "model": "openai/gpt-4o-mini", "tools": "shell,save,patch", "format": "markdown",
     "max_steps": 20, "task_timeout": 600, "metadata": {"split": "dev"}}

Only ``id`` and ``prompt`` are required. A key has the name of the flag and the
:class:`~fencecall.batch.BatchOptions` field it stands in for (``max_steps``,
``--max-steps``); ``timeout``, the old name of ``task_timeout``, is still read as it.
``workspace`` is a folder or git repository to copy (a path, relative to the tasks file),
or an object: ``{"path": ...}`` to copy, ``{"git": URL_OR_PATH, "ref": REV}`` to clone and
check out, and ``"files": {PATH: TEXT}`` to create (alone, or on top of the copy). A task
without one starts in an empty folder. A task with an ``image`` runs its tools in a container
of it, whose working folder (``workdir``, else the image's) is the workspace: filled from the
image where the task gives no workspace. ``cpus`` and ``memory_mb`` (Harbor's names) limit
that container, as a Harbor task's ``[environment]`` does.
"""

from __future__ import annotations

import json
import math
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

from ..assembly import Overrides
from ..errors import UserError, new_names, unknown_settings
from ..parsing import FORMATS

KNOWN_KEYS = frozenset({"id", "prompt", "workspace", "model", "tools", "format", "max_steps",
                        "task_timeout", "metadata", "image", "workdir", "cpus",
                        "memory_mb"})
RENAMED_KEYS = {"timeout": "task_timeout"}
"""Old key to new: a tasks file written before a rename still loads (both: an error)."""
WORKSPACE_KEYS = frozenset({"path", "git", "ref", "files"})


class TaskError(UserError, ValueError):
    """A tasks file (or a task given to the API) is invalid; the message names the line."""


@dataclass(frozen=True, slots=True)
class WorkspaceSpec:
    """Where a task's workspace comes from: a folder to copy (``path``; a git repository is
    copied whole) or a repository to clone (``git``, checked out at ``ref``), and files to
    create in it. All empty: an empty folder."""

    path: Path | None = None
    git: str | None = None
    ref: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Task:
    """One independent job for the agent. ``None`` settings take the batch's defaults."""

    id: str
    prompt: str
    workspace: WorkspaceSpec = field(default_factory=WorkspaceSpec)
    model: str | None = None
    tools: tuple[str, ...] | None = None
    format: str | None = None
    max_steps: int | None = None
    task_timeout: float | None = None
    """Seconds the whole task may take (model replies and tools together)."""
    metadata: Mapping[str, Any] = field(default_factory=dict)
    image: str | None = None
    """The image of the container the task's tools run in (None: the batch's choice)."""
    workdir: str | None = None
    """The container's working folder (None: the image's WORKDIR)."""
    cpus: float | None = None
    """CPUs the task's container may use (None: no limit)."""
    memory_mb: int | None = None
    """Memory the task's container may use, in MB (None: no limit)."""

    @property
    def overrides(self) -> Overrides:
        """What the task says of its own settings (it wins over the batch's)."""
        return Overrides(model=self.model, tools=self.tools, format=self.format,
                         max_steps=self.max_steps,
                         environment=f"container:{self.image}" if self.image else None)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], base: Path | None = None) -> Task:
        """A task from its JSON object; relative workspace paths are read against ``base``
        (default: the current folder). Raises :class:`TaskError` with what is wrong."""
        if not isinstance(data, Mapping):
            raise TaskError("a task must be a JSON object")
        data = new_names(data, RENAMED_KEYS, "", TaskError)
        _only_known(data, KNOWN_KEYS, "")
        task_id = data.get("id")
        if isinstance(task_id, int) and not isinstance(task_id, bool):
            task_id = str(task_id)
        if not isinstance(task_id, str) or not task_id.strip():
            raise TaskError("id must be a non-empty string")
        prompt = data.get("prompt")
        if not isinstance(prompt, str) or not prompt.strip():
            raise TaskError(f"task {task_id!r}: prompt must be a non-empty string")
        metadata = data.get("metadata", {})
        if not isinstance(metadata, Mapping):
            raise TaskError(f"task {task_id!r}: metadata must be an object")
        try:
            return cls(
                id=task_id, prompt=prompt,
                workspace=_workspace(data.get("workspace"), base or Path.cwd()),
                model=_optional_text(data, "model"), tools=_tools(data.get("tools")),
                format=_format(data.get("format")),
                max_steps=_positive(data, "max_steps", whole=True),
                task_timeout=_positive(data, "task_timeout", whole=False),
                metadata=dict(metadata), image=_optional_text(data, "image"),
                workdir=_folder(data, "workdir"), cpus=_positive(data, "cpus", whole=False),
                memory_mb=_positive(data, "memory_mb", whole=True))
        except TaskError as err:
            raise TaskError(f"task {task_id!r}: {err}") from None


def _optional_text(data: Mapping[str, Any], key: str) -> str | None:
    value = data.get(key)
    if value is not None and (not isinstance(value, str) or not value.strip()):
        raise TaskError(f"{key} must be a non-empty string")
    return value


def _folder(data: Mapping[str, Any], key: str) -> str | None:
    value = _optional_text(data, key)
    if value is not None and not value.startswith("/"):
        raise TaskError(f"{key} must be an absolute path in the container")
    return value


def _tools(value: Any) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise TaskError("tools must be a comma-separated string or a list of strings")
    names = tuple(v.strip() for v in value if v.strip())
    if not names:
        raise TaskError("tools must name at least one tool")
    return names


def _format(value: Any) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in FORMATS:
        raise TaskError(f"format must be one of {', '.join(FORMATS)}")
    return value


def _positive(data: Mapping[str, Any], key: str, *, whole: bool) -> Any:
    value = data.get(key)
    if value is None:
        return None
    numeric = isinstance(value, int) or (isinstance(value, float) and not whole)
    if isinstance(value, bool) or not numeric or not math.isfinite(value) or value <= 0:
        kind = "a positive integer" if whole else \
            f"a positive number{' of seconds' if key.endswith('timeout') else ''}"
        raise TaskError(f"{key} must be {kind}, got {value!r}")
    return value


def _workspace(value: Any, base: Path) -> WorkspaceSpec:
    if value is None:
        return WorkspaceSpec()
    if isinstance(value, str):
        value = {"path": value}
    if not isinstance(value, Mapping):
        raise TaskError("workspace must be a path or an object with path, git, ref, files")
    _only_known(value, WORKSPACE_KEYS, "workspace: ")
    path, git, ref = value.get("path"), value.get("git"), value.get("ref")
    for key, text in (("path", path), ("git", git), ("ref", ref)):
        if text is not None and (not isinstance(text, str) or not text.strip()):
            raise TaskError(f"workspace.{key} must be a non-empty string")
    if path is not None and git is not None:
        raise TaskError("workspace: give path (a folder to copy) or git (a repository to "
                        "clone), not both")
    if ref is not None and git is None:
        raise TaskError("workspace.ref needs workspace.git")
    source = None
    if path is not None:
        source = (base / Path(path).expanduser()).resolve()
        if not source.is_dir():
            raise TaskError(f"workspace {str(source)!r} is not a folder")
    if git is not None and "://" not in git and ":" not in git.partition("/")[0]:
        git = str((base / Path(git).expanduser()).resolve())  # a local repository
    return WorkspaceSpec(source, git, ref, _files(value.get("files", {})))


def _files(value: Any) -> dict[str, str]:
    if not isinstance(value, Mapping) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
        raise TaskError("workspace.files must map relative paths to their text")
    for name in value:
        parts = PurePosixPath(name).parts
        if not name or name.startswith("/") or ".." in parts or "\\" in name or not parts:
            raise TaskError(f"workspace.files: {name!r} must be a relative path inside the "
                            "workspace (no '..', not absolute)")
    return dict(value)


def parse_tasks(lines: Iterable[str], *, base: Path | None = None,
                source: str = "tasks") -> list[Task]:
    """Every task of a JSONL text, checked: a line that is not a valid task, or an id used
    twice, is a :class:`TaskError` naming its line, before any task runs."""
    tasks: list[Task] = []
    first_line: dict[str, int] = {}
    duplicates: list[str] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            raise TaskError(f"{source} line {number}: not JSON ({err.msg})") from None
        try:
            task = Task.from_dict(data, base)
        except TaskError as err:
            raise TaskError(f"{source} line {number}: {err}") from None
        if task.id in first_line:
            duplicates.append(f"{task.id!r} (lines {first_line[task.id]} and {number})")
        else:
            first_line[task.id] = number
        tasks.append(task)
    if duplicates:
        raise TaskError(f"{source}: duplicate task ids: {', '.join(duplicates[:10])}"
                        + (f" and {len(duplicates) - 10} more" if len(duplicates) > 10 else ""))
    return tasks


def load_tasks(path: Path) -> list[Task]:
    """The tasks of a JSONL file (``-``: standard input, relative workspaces then read against
    the current folder; else against the file's); a file with none is an error, not a batch
    that did nothing."""
    piped = str(path) == "-"
    source = "standard input" if piped else str(path)
    try:
        text = sys.stdin.read() if piped else path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TaskError(f"{source}: cannot read the tasks ({err})") from None
    tasks = parse_tasks(text.splitlines(), base=Path.cwd() if piped else path.resolve().parent,
                        source=source)
    if not tasks:
        raise TaskError(f"{source}: no tasks (one JSON object a line: id, prompt, ...)")
    return tasks


def check_unique(tasks: Iterable[Task]) -> list[Task]:
    """``tasks`` as a list, or a :class:`TaskError` if two share an id (for the API, where
    tasks need not come from a file)."""
    listed = list(tasks)
    seen: set[str] = set()
    twice: list[str] = []
    for task in listed:
        if task.id in seen:
            twice.append(task.id)
        seen.add(task.id)
    if twice:
        raise TaskError(f"duplicate task ids: {', '.join(map(repr, twice[:10]))}")
    return listed


def _only_known(data: Mapping[str, Any], known: frozenset[str] | set[str], where: str) -> None:
    problem = unknown_settings(data, known, where.rstrip(": "))
    if problem is not None:
        raise TaskError(problem)
