"""A Harbor task folder, read as Harbor reads it.

A task is a folder with ``task.toml``, ``instruction.md`` (the prompt), ``environment/`` (a
``Dockerfile`` and its build context, or ``[environment] docker_image``), ``tests/``
(``test.sh``, copied in only for the verifier) and optionally ``solution/`` (``solve.sh``,
for ``--agent oracle``), or ``[[steps]]`` of their own (:mod:`._steps`). Only the keys
fencecall acts on are read; every other key and section is kept in :attr:`HarborTask.raw`
and refused nowhere, since task sets written for schema 1.0 and for later ones both occur.
``version`` is the old name of ``schema_version``, ``memory = "2G"`` of ``memory_mb``,
``allow_internet`` of ``network_mode``, as in Harbor.

``env`` tables name host variables as ``${VAR}`` or ``${VAR:-default}`` (a whole value, as
Harbor matches it); :func:`resolve_env` reads them from fencecall's own environment when a
trial starts, and a variable that is not set is that task's error.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ._reader import Reader
from ._reader import TaskError as TaskError  # the face of this module
from ._steps import VERIFIER_TIMEOUT, Step, network, read_steps, reward_strategy

CONFIG_NAME = "task.toml"
BUILD_TIMEOUT = 600.0
"""Harbor's default ``[environment] build_timeout_sec``."""
_TEMPLATE = re.compile(r"\$\{([^}:]+)(?::-(.*))?\}")
_SIZE_UNITS = {"G": 1024.0, "M": 1.0, "K": 1 / 1024}


@dataclass(frozen=True, slots=True)
class EnvironmentSpec:
    """``[environment]``: what the trial's container is made of and may use."""

    dockerfile: Path | None
    """``environment/Dockerfile``, built with its folder as the context (None: use
    :attr:`docker_image` as it is)."""
    docker_image: str | None = None
    workdir: str | None = None
    """Where the agent works (None: the image's ``WORKDIR``)."""
    network: bool = True
    """Harbor's default network mode is public."""
    cpus: float | None = None
    memory_mb: int | None = None
    build_timeout: float = BUILD_TIMEOUT
    env: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class HarborTask:
    """One task folder: its name (the folder's), its prompt, and the settings of its
    environment, agent, verifier and solution; ``raw`` is the whole ``task.toml``."""

    name: str
    path: Path
    instruction: str
    environment: EnvironmentSpec
    agent_timeout: float | None = None
    verifier_timeout: float = VERIFIER_TIMEOUT
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    solution_env: Mapping[str, str] = field(default_factory=dict)
    schema_version: str | None = None
    raw: Mapping[str, Any] = field(default_factory=dict)
    agent_user: str | None = None
    """Whom the agent runs as (None: the image's ``USER``); the verifier's likewise."""
    verifier_user: str | None = None
    steps: tuple[Step, ...] = ()
    """``[[steps]]`` (none: the task is one step, :meth:`plan`)."""
    reward_strategy: str = "mean"
    network_refusal: str | None = None
    """Why the task's network cannot be given here (its trials are not run)."""

    def plan(self) -> tuple[Step, ...]:
        """The steps a trial runs: ``[[steps]]``, else the task as its one step."""
        return self.steps or (Step(
            None, self.instruction, (self.tests,), self.solution,
            agent_timeout=self.agent_timeout, agent_user=self.agent_user,
            verifier_timeout=self.verifier_timeout, verifier_env=self.verifier_env,
            verifier_user=self.verifier_user),)

    @property
    def tests(self) -> Path:
        return self.path / "tests"

    @property
    def solution(self) -> Path:
        return self.path / "solution"


def find_tasks(paths: list[Path]) -> list[Path]:
    """The task folders ``paths`` name: each one that holds ``task.toml``, else the folders
    right below it that do (sorted). :class:`TaskError` for a path that holds none, or two
    tasks of one name (results are keyed by it)."""
    found: list[Path] = []
    for path in paths:
        if (path / CONFIG_NAME).is_file():
            found.append(path)
            continue
        below = sorted(child for child in path.iterdir() if (child / CONFIG_NAME).is_file()) \
            if path.is_dir() else []
        if not below:
            raise TaskError(f"{path}: neither a task folder (no {CONFIG_NAME}) nor a folder "
                            "of them")
        found.extend(below)
    names: dict[str, Path] = {}
    for folder in found:
        if folder.name in names and names[folder.name].resolve() != folder.resolve():
            raise TaskError(f"two tasks are named {folder.name!r}: {names[folder.name]} and "
                            f"{folder}")
        names[folder.name] = folder
    return list(names.values())


def read_task(folder: Path) -> HarborTask:
    """The task in ``folder``; :class:`TaskError` naming the file and key where it cannot
    be read."""
    config = folder / CONFIG_NAME
    try:
        raw = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as err:
        raise TaskError(f"{config}: {err}") from None
    read = Reader(config, raw)
    steps = read_steps(folder, read)
    try:
        instruction = (folder / "instruction.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        if not steps:  # a multi-step task's instructions are its steps'
            raise TaskError(f"{folder}: no readable instruction.md ({err})") from None
        instruction = ""
    public, refusal = network(read)
    return HarborTask(
        name=folder.name, path=folder, instruction=instruction,
        environment=_environment(folder, read, public),
        agent_timeout=read.number("agent", "timeout_sec"),
        verifier_timeout=read.number("verifier", "timeout_sec") or VERIFIER_TIMEOUT,
        verifier_env=read.env("verifier"), solution_env=read.env("solution"),
        schema_version=read.text("", "schema_version") or read.text("", "version"), raw=raw,
        agent_user=read.user("agent"), verifier_user=read.user("verifier"), steps=steps,
        reward_strategy=reward_strategy(read), network_refusal=refusal)


def _environment(folder: Path, read: Reader, public: bool) -> EnvironmentSpec:
    dockerfile = folder / "environment" / "Dockerfile"
    image = read.text("environment", "docker_image")
    if not dockerfile.is_file() and image is None:
        raise TaskError(f"{folder}: no environment/Dockerfile and no [environment] "
                        "docker_image")
    cpus = read.number("environment", "cpus")
    return EnvironmentSpec(
        dockerfile=dockerfile if dockerfile.is_file() else None, docker_image=image,
        workdir=read.text("environment", "workdir"), network=public,
        cpus=cpus, memory_mb=_memory_mb(read),
        build_timeout=read.number("environment", "build_timeout_sec") or BUILD_TIMEOUT,
        env=read.env("environment"))


def _memory_mb(read: Reader) -> int | None:
    """``memory_mb``, or the older ``memory`` (``"2G"``, ``"512M"``), as Harbor reads it."""
    number = read.number("environment", "memory_mb")
    old = read.section("environment").get("memory")
    if isinstance(old, str):
        text = old.strip().upper()
        if text[-1:] not in _SIZE_UNITS:
            raise read.error("environment", "memory", f"{old!r} is no size like '2G' or '512M'")
        try:
            from_old = int(float(text[:-1]) * _SIZE_UNITS[text[-1]])
        except ValueError:
            raise read.error("environment", "memory", f"{old!r} is no size") from None
        if number is not None and int(number) != from_old:
            raise read.error("environment", "memory", f"{old!r} contradicts memory_mb")
        return from_old
    return None if number is None else int(number)


def resolve_env(table: Mapping[str, str], environ: Mapping[str, str],
                where: str = "env") -> dict[str, str]:
    """``table`` with each value that is a whole ``${VAR}`` or ``${VAR:-default}`` read from
    ``environ`` (Harbor's rule: other text stays as written). :class:`TaskError` names a
    variable that is not set and has no default."""
    resolved: dict[str, str] = {}
    for key, value in table.items():
        match = _TEMPLATE.fullmatch(value)
        if match is None:
            resolved[key] = value
        elif match.group(1) in environ:
            resolved[key] = environ[match.group(1)]
        elif match.group(2) is not None:
            resolved[key] = match.group(2)
        else:
            raise TaskError(f"{where}: {key} = {value!r} needs the variable "
                            f"{match.group(1)}, which is not set")
    return resolved
