"""A task's steps and its network, read as Harbor reads them.

A task without ``[[steps]]`` is one step: ``instruction.md``, ``tests/``, ``solution/``,
the ``[agent]`` and ``[verifier]`` settings. A multi-step task runs its ``[[steps]]`` in
order in one container: each has ``steps/NAME/instruction.md``, its ``tests/`` copied on
top of the task's (its ``test.sh`` wins), its ``solution/`` where it has one (else the
task's), its ``workdir/`` copied into the working folder before its agent (a ``setup.sh``
there is run first), and its own ``agent``/``verifier`` settings over the task's, as
Harbor resolves them (a step's verifier timeout is its own, 600 s unless it says).

The network: ``[environment] network_mode`` (``public``, ``no-network``, ``allowlist``
with ``allowed_hosts``), else the older ``allow_internet``; public where neither is said.
A container's network is fixed when it starts here, and neither podman nor docker holds it
to a list of hosts, so, as Harbor does on such an environment, a task that needs either
(an allowlist, or an ``[agent]``/``[verifier]`` ``network_mode`` other than the
environment's) is refused for its trials with the reason, never run with more network.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from ._reader import Reader, TaskError

VERIFIER_TIMEOUT = 600.0
"""Harbor's default ``[verifier] timeout_sec`` (a step's too)."""
NETWORK_MODES = ("public", "no-network", "allowlist")
REWARD_STRATEGIES = ("mean", "final")
_BAD_NAME = re.compile(r'[<>:"/\\|?*\x00-\x1f\x7f]')


@dataclass(frozen=True, slots=True)
class Step:
    """One agent run and its verifier (see the module); ``name`` None for a task without
    ``[[steps]]``."""

    name: str | None
    instruction: str
    tests: tuple[Path, ...]
    """The folders copied to ``/tests``, in order (those that exist)."""
    solution: Path
    agent_timeout: float | None = None
    agent_user: str | None = None
    verifier_timeout: float = VERIFIER_TIMEOUT
    verifier_env: Mapping[str, str] = field(default_factory=dict)
    verifier_user: str | None = None
    workdir: Path | None = None
    min_reward: Mapping[str, float] | None = None
    """The rewards below which the remaining steps do not run."""


def read_steps(folder: Path, read: Reader) -> tuple[Step, ...]:
    """The task's ``[[steps]]`` (none: a task of one step)."""
    listed = read.raw.get("steps")
    if listed is None:
        return ()
    if not isinstance(listed, list) or not listed \
            or not all(isinstance(table, dict) for table in listed):
        raise read.error("", "steps", "must be one or more [[steps]] tables")
    seen: set[str] = set()
    for table in listed:  # every name checked before any step's files are read
        name = table.get("name")
        if not isinstance(name, str) or not name.strip() or name in (".", "..") \
                or name.endswith((".", " ")) or _BAD_NAME.search(name):
            raise read.error("", "steps", f"a step's name must be a folder name, not {name!r}")
        key = unicodedata.normalize("NFC", name).casefold()
        if key in seen:
            raise read.error("", "steps", f"two steps are named {name!r}")
        seen.add(key)
    return tuple(_step(folder, read, Reader(read.path, table, f"[[steps]] {table['name']}: "),
                       table["name"]) for table in listed)


def _step(folder: Path, task: Reader, read: Reader, name: str) -> Step:
    base = folder / "steps" / name
    try:
        instruction = (base / "instruction.md").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise TaskError(f"{base}: no readable instruction.md ({err})") from None
    return Step(
        name, instruction, tests=(folder / "tests", base / "tests"),
        solution=base / "solution" if (base / "solution").is_dir() else folder / "solution",
        agent_timeout=read.number("agent", "timeout_sec") or task.number("agent", "timeout_sec"),
        agent_user=read.user("agent") or task.user("agent"),
        verifier_timeout=read.number("verifier", "timeout_sec") or VERIFIER_TIMEOUT,
        verifier_env={**task.env("verifier"), **read.env("verifier")},
        verifier_user=read.user("verifier") or task.user("verifier"),
        workdir=base / "workdir" if (base / "workdir").is_dir() else None,
        min_reward=_min_reward(read))


def _min_reward(read: Reader) -> dict[str, float] | None:
    """``min_reward``: a number (for ``reward``) or a table of them."""
    value = read.raw.get("min_reward")
    if value is None:
        return None
    table = value if isinstance(value, dict) else {"reward": value}
    if not all(isinstance(v, int | float) and not isinstance(v, bool) for v in table.values()):
        raise read.error("", "min_reward", "must be a number or a table of numbers")
    return {str(key): float(v) for key, v in table.items()}


def reward_strategy(read: Reader) -> str:
    """``multi_step_reward_strategy``: ``mean`` (Harbor's default) or ``final``."""
    value = read.text("", "multi_step_reward_strategy") or "mean"
    if value not in REWARD_STRATEGIES:
        raise read.error("", "multi_step_reward_strategy", "must be mean or final")
    return value


def network(read: Reader) -> tuple[bool, str | None]:
    """Whether the container has the network (public), and why the task cannot run here
    (None: it can); see the module."""
    mode, hosts = _policy(read, "environment")
    if mode is None:
        allow = read.section("environment").get("allow_internet")
        if allow is not None and not isinstance(allow, bool):
            raise read.error("environment", "allow_internet", "must be true or false")
        mode = "no-network" if allow is False else "public"
    if mode == "allowlist":
        return False, (f"{read.path}: [environment] network_mode = 'allowlist' "
                       f"({', '.join(hosts) or 'no hosts'}) cannot be enforced here (podman "
                       "and docker hold a container to all of the network or none), so the "
                       "trial is not run rather than run with the whole network")
    phases = [(read, "agent"), (read, "verifier")]
    for table in read.raw.get("steps") or ():
        if isinstance(table, dict):
            step = Reader(read.path, table, f"[[steps]] {table.get('name')}: ")
            phases += [(step, "agent"), (step, "verifier")]
    for reader, section in phases:
        phase, phase_hosts = _policy(reader, section)
        if phase is not None and (phase, phase_hosts) != (mode, hosts):
            return mode == "public", (
                f"{read.path}: {reader.where}[{section}] network_mode = {phase!r} differs "
                f"from the environment's {mode!r}, and a container's network cannot change "
                "once it runs here, so the trial is not run")
    return mode == "public", None


def _policy(read: Reader, section: str) -> tuple[str | None, tuple[str, ...]]:
    mode = read.text(section, "network_mode")
    hosts = read.hosts(section)
    if mode is not None and mode not in NETWORK_MODES:
        raise read.error(section, "network_mode", f"{mode!r} is none of {NETWORK_MODES}")
    if hosts is not None and mode != "allowlist":
        raise read.error(section, "allowed_hosts", "is only valid with network_mode = "
                         "'allowlist'")
    return mode, tuple(hosts or ())


def mean_or_final(rewards: list[Mapping[str, float] | None], strategy: str
                  ) -> dict[str, float] | None:
    """The trial's rewards from those of the steps that ran (None: a step that got none),
    as Harbor derives them: the last step's, or each key's mean over the steps that got
    rewards (a key a step lacks counts 0 there)."""
    if strategy == "final":
        return None if not rewards or rewards[-1] is None else dict(rewards[-1])
    got = [table for table in rewards if table is not None]
    keys = sorted({key for table in got for key in table})
    if not keys:
        return None
    return {key: sum(table.get(key, 0.0) for table in got) / len(got) for key in keys}


def below(rewards: Mapping[str, float] | None, floor: Mapping[str, float] | None) -> bool:
    """Whether a step's ``rewards`` miss its ``min_reward`` (a missing one always does)."""
    if floor is None:
        return False
    return any((rewards or {}).get(key, float("-inf")) < value for key, value in floor.items())
