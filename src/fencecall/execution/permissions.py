"""Permission rules: calls the user lets run without asking, and calls refused outright.

A :class:`Permissions` set judges each call, as parsed and bound, before confirmation (a
pre-execute hook of the session, so every frontend gets the same rules). A deny rule that
matches refuses the call, whatever an allow rule, ``-y`` or the user would say; else an
allow rule that matches runs it unasked; else it is confirmed as usual. What a rule's
pattern is matched against (the globs: :mod:`._globs`):

- ``shell``: each simple command of the line (:mod:`._shell_split`). An allow rule needs
  every command to match some allow rule, and a line that cannot be split with confidence
  matches none; a deny rule matches if any command does (also with its quotes and leading
  ``NAME=value`` words taken off, and on a line it cannot split, any piece between
  separators).
- file tools (a :attr:`~fencecall.tools.ToolSpec.paths`): each path, resolved as the tools
  resolve it (``..``, links), relative to the workspace, or absolute for a pattern that
  starts with ``/``. An allow rule needs every path inside the workspace and matching; a
  deny rule matches any path, as resolved or as written.
- other tools: the body (``code``, say), stripped; a tool without one (JSON arguments, an
  MCP tool's) only by a bare ``TOOL`` rule to allow, while a deny pattern is matched against
  its arguments as JSON with sorted keys.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import threading
from collections.abc import Iterator
from pathlib import Path

from ..realpath import relative_text
from ..tools import Allow, Block, HookRegistry, Remember, ToolInvocation
from ..tools.hook_points import TOOL_PRE_EXECUTE, ToolPreExecute
from ..tools.permission_rules import PermissionRules, Rule, RuleError, literal, parse_rule
from ..tools.workspace import locate
from ._globs import command_matches, name_matches, path_matches, text_matches
from ._shell_split import Command, split_commands

__all__ = ["PRIORITY", "PermissionRules", "Permissions", "Rule", "RuleError", "parse_rule"]

PRIORITY = 100_000
"""The rules' hook runs before the hooks of tools and users (a deny ends the others)."""
_SEPARATORS = re.compile(r"[;&|\n(){}`]|\$\(|<\(|>\(")
_ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")


class Permissions:
    """The rules of one conversation; the terminal's "always allow" adds to them."""

    def __init__(self, rules: PermissionRules | None = None) -> None:
        self._rules = rules or PermissionRules()
        self._lock = threading.Lock()

    @property
    def rules(self) -> PermissionRules:
        return self._rules

    def add_allow(self, rule: Rule | str) -> None:
        added = parse_rule(rule) if isinstance(rule, str) else rule
        with self._lock:
            self._rules = self._rules + PermissionRules(allow=(added,))

    def install(self, hooks: HookRegistry) -> None:
        """Judge every call of the session that owns ``hooks``."""
        hooks.add(TOOL_PRE_EXECUTE, self._judge, priority=PRIORITY, name="permissions")

    def _judge(self, event: ToolPreExecute) -> Allow | Block | None:
        return self.decide(event.invocation)

    def decide(self, invocation: ToolInvocation) -> Allow | Block | None:
        """Block where a deny rule matches, Allow where an allow rule does, else None."""
        rules = self._rules
        for rule in rules.deny:
            what = _denied(rule, invocation)
            if what is not None:
                said = f" ({what})" if what else ""
                return Block(f"the user's deny rule {rule} refuses it{said}")
        if invocation.spec.name == "shell":
            return _shell_allowed(rules.allow, invocation)
        for rule in rules.allow:
            if _allows(rule, invocation):
                return Allow(f"the user's allow rule {rule}")
        return None

    def offer(self, invocation: ToolInvocation) -> Remember | None:
        """The narrowest rules that allow ``invocation`` and a way to add them, or None
        where no rule can (a shell line that cannot be split, a path outside the
        workspace, an empty body)."""
        rules = narrowest(invocation)
        if not rules:
            return None

        def add() -> None:
            for rule in rules:
                self.add_allow(rule)

        return Remember(tuple(str(rule) for rule in rules), add)


def narrowest(invocation: ToolInvocation) -> tuple[Rule, ...]:
    """For shell each command of the line as it is; for file tools each path exactly; for
    others the body exactly, or the bare tool where it has no body (JSON arguments)."""
    spec, name = invocation.spec, invocation.spec.name
    if name == "shell":
        commands = split_commands(invocation.kwargs.get("command", ""))
        texts = [command.text for command in commands or ()]
    elif spec.paths is not None:
        found = [_where(given, invocation)[0] for given in spec.paths(invocation)]
        texts = [] if None in found else [path for path in found if path is not None]
    else:
        body = _body(invocation)
        if body is None:
            return (Rule(name),)
        texts = [body] if body else []
    return tuple(dict.fromkeys(Rule(name, literal(text)) for text in texts))


def _shell_allowed(allow: tuple[Rule, ...], invocation: ToolInvocation) -> Allow | None:
    """Allow where a bare rule names the shell, or every command matches an allow rule."""
    mine = [rule for rule in allow if name_matches(rule.tool, invocation.spec.name)]
    bare = next((rule for rule in mine if rule.pattern is None), None)
    if bare is not None:
        return Allow(f"the user's allow rule {bare}")
    commands = split_commands(invocation.kwargs.get("command", ""))
    if not commands:
        return None
    used = []
    for command in commands:
        rule = next((r for r in mine if r.pattern and command_matches(r.pattern, command)), None)
        if rule is None:
            return None
        used.append(str(rule))
    return Allow(f"the user's allow rules {', '.join(dict.fromkeys(used))}")


def _allows(rule: Rule, invocation: ToolInvocation) -> bool:
    if not name_matches(rule.tool, invocation.spec.name):
        return False
    pattern, spec = rule.pattern, invocation.spec
    if pattern is None:
        return True
    if spec.paths is not None:
        given = spec.paths(invocation)
        return bool(given) and all(_path_allowed(pattern, path, invocation) for path in given)
    body = _body(invocation)
    return body is not None and text_matches(pattern, body)


def _denied(rule: Rule, invocation: ToolInvocation) -> str | None:
    """What of the call ``rule`` refuses ("" for the whole call), or None."""
    if not name_matches(rule.tool, invocation.spec.name):
        return None
    pattern, spec = rule.pattern, invocation.spec
    if pattern is None:
        return ""
    if spec.name == "shell":
        line = invocation.kwargs.get("command", "")
        return next((command.text for command in _deniable(line)
                     if any(command_matches(pattern, form) for form in _forms(command))), None)
    if spec.paths is not None:
        return next((path for path in spec.paths(invocation)
                     if any(path_matches(pattern, form)
                            for form in _path_forms(pattern, path, invocation))), None)
    body = _body(invocation)
    if body is None:
        body = json.dumps(dict(invocation.kwargs), sort_keys=True, ensure_ascii=False,
                          default=str)
    return "" if text_matches(pattern, body) else None


def _deniable(line: str) -> list[Command]:
    """The commands of ``line``, or where it cannot be split, every piece between things
    that could separate commands (more pieces than there are: a deny errs that way)."""
    commands = split_commands(line)
    if commands is not None:
        return commands
    pieces = [piece.strip() for piece in _SEPARATORS.split(line)]
    return [Command(" ".join(piece.split())) for piece in (line.strip(), *pieces) if piece]


def _forms(command: Command) -> Iterator[Command]:
    """The command, then its words unquoted, without leading ``NAME=value`` words."""
    yield command
    try:
        words = shlex.split(command.text)
    except ValueError:
        return
    while words and _ASSIGNMENT.match(words[0]):
        words.pop(0)
    yield Command(" ".join(words))


def _body(invocation: ToolInvocation) -> str | None:
    """The call's body (its content parameter), stripped; None for a tool without one."""
    param = invocation.spec.content_param
    value = invocation.kwargs.get(param) if param is not None else None
    return value.strip() if isinstance(value, str) else None


def _where(given: str, invocation: ToolInvocation) -> tuple[str | None, str | None]:
    """(relative to the workspace, absolute) of ``given`` as the file tools resolve it;
    the first None outside the workspace, both None where it cannot be resolved."""
    workspace = invocation.context.workspace
    candidate = Path(given).expanduser()
    absolute = candidate if candidate.is_absolute() else workspace / candidate
    try:
        with locate(str(absolute), (Path("/"),)) as place:
            real = place.path
    except (OSError, ValueError):
        return None, None
    return relative_text(real, workspace), str(real)


def _path_allowed(pattern: str, given: str, invocation: ToolInvocation) -> bool:
    relative, absolute = _where(given, invocation)
    if relative is None or absolute is None:
        return False
    return path_matches(pattern, absolute if pattern.startswith("/") else relative)


def _path_forms(pattern: str, given: str, invocation: ToolInvocation) -> list[str]:
    """The forms of ``given`` a deny ``pattern`` is matched against: resolved, and as
    written with ``..`` and ``.`` worked out."""
    workspace = invocation.context.workspace
    written = Path(os.path.normpath(workspace / Path(given).expanduser()))
    forms: list[str] = []
    for path in (_where(given, invocation)[1], str(written)):
        if path is None:
            continue
        if pattern.startswith("/"):
            forms.append(path)
        elif (relative := relative_text(Path(path), workspace)) is not None:
            forms.append(relative)
    return forms

