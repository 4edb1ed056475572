"""A user hook as the configuration file declares it: ``[[hooks]]`` tables.

Hooks are the user's own commands, run outside the sandbox, so they are read only from the
user's configuration file (never from a workspace, a resumed log or a batch task: anything
the model may have written).
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal, get_args

from ...errors import unknown_settings

HookEvent = Literal["session_start", "prompt", "pre_tool", "post_tool", "stop", "session_end"]
HOOK_EVENTS: tuple[HookEvent, ...] = get_args(HookEvent)
TOOL_EVENTS: frozenset[HookEvent] = frozenset({"pre_tool", "post_tool"})
"""The events a ``matcher`` may narrow (the others concern no tool)."""
HOOK_KEYS = frozenset({"event", "matcher", "command", "timeout"})
DEFAULT_TIMEOUT = 60.0
"""Seconds a hook may run before its process group is killed."""


class HookDeclarationError(ValueError):
    """A ``[[hooks]]`` entry is invalid; the message names the entry and the key."""


@dataclass(frozen=True, slots=True)
class UserHook:
    """One ``[[hooks]]`` entry: ``command`` (argv: ``/bin/sh -c TEXT`` for a string) run at
    ``event`` for the tools ``matcher`` names (globs joined by ``|``; None: every tool)."""

    event: HookEvent
    argv: tuple[str, ...]
    matcher: str | None = None
    timeout: float = DEFAULT_TIMEOUT
    name: str = "hook"
    """How messages name it: ``hooks[INDEX] (EVENT)``."""

    def matches(self, tool: str) -> bool:
        """Whether this hook applies to a call of ``tool``."""
        if self.matcher is None:
            return True
        return any(fnmatch.fnmatchcase(tool, pattern.strip())
                   for pattern in self.matcher.split("|") if pattern.strip())


def read_hooks(value: Any) -> tuple[UserHook, ...]:
    """The ``hooks`` key of the file: an array of tables (``[[hooks]]``)."""
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise HookDeclarationError("hooks must be an array of tables ([[hooks]] entries)")
    return tuple(_hook(index, table) for index, table in enumerate(value))


def _hook(index: int, table: Mapping[str, Any]) -> UserHook:
    where = f"hooks[{index}]"
    problem = unknown_settings(table, HOOK_KEYS, where)
    if problem is not None:
        raise HookDeclarationError(problem)
    event = table.get("event")
    if event not in HOOK_EVENTS:
        raise HookDeclarationError(f"{where}.event must be one of {', '.join(HOOK_EVENTS)}, "
                                   f"got {event!r}")
    matcher = table.get("matcher")
    if matcher is not None and (event not in TOOL_EVENTS or not isinstance(matcher, str)
                                or not matcher.strip()):
        raise HookDeclarationError(f"{where}.matcher: a tool name glob or globs joined by | "
                                   f"(such as \"save|patch\"), for pre_tool and post_tool "
                                   f"hooks only")
    timeout = table.get("timeout", DEFAULT_TIMEOUT)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
        raise HookDeclarationError(f"{where}.timeout must be a number of seconds above 0, "
                                   f"got {timeout!r}")
    return UserHook(event, _argv(where, table.get("command")), matcher, float(timeout),
                    f"{where} ({event})")


def _argv(where: str, command: Any) -> tuple[str, ...]:
    """A string is a shell command line; a list is the program and its arguments."""
    if isinstance(command, str) and command.strip():
        return ("/bin/sh", "-c", command)
    if isinstance(command, list) and command and all(
            isinstance(part, str) for part in command) and command[0]:
        return tuple(command)
    raise HookDeclarationError(f"{where}.command must be a command line (run with /bin/sh "
                               f"-c) or a non-empty list of strings (a program and its "
                               f"arguments)")
