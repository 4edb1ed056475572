"""What a permission rule says: ``TOOL`` or ``TOOL(PATTERN)``, written by the user.

``TOOL`` is a tool's name or a glob over names (``mcp.github.*``); ``PATTERN`` a glob over
what the call does (a shell command, a path, code), matched by
:mod:`fencecall.execution.permissions`. Only the syntax lives here, below the configuration,
so that a malformed rule in the file or on the command line is refused as it is read.

In a pattern ``*`` and ``?`` are wildcards and a backslash takes the next character as it is
(``\\*``, ``\\(``); parentheses must pair up unless escaped. A shell pattern ending in
``:*`` (Claude Code's spelling) means the same as one ending in `` *``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import UserError

_TOOL_GLOB = re.compile(r"[A-Za-z_*?][\w.\-*?]*")
_SPECIAL = frozenset("*?\\()")


class RuleError(UserError, ValueError):
    """A permission rule that cannot be read; the message names it and says why."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One rule: the tools it names (a glob) and, if given, the pattern a call must match."""

    tool: str
    pattern: str | None = None

    def __str__(self) -> str:
        return self.tool if self.pattern is None else f"{self.tool}({self.pattern})"


@dataclass(frozen=True, slots=True)
class PermissionRules:
    """The rules in force: ``deny`` refuses a call whatever else says yes, ``allow`` lets one
    run without asking (the ``[permissions]`` table, ``--allow`` and ``--deny``)."""

    allow: tuple[Rule, ...] = ()
    deny: tuple[Rule, ...] = ()

    def __add__(self, other: PermissionRules) -> PermissionRules:
        return PermissionRules(self.allow + other.allow, self.deny + other.deny)


def parse_rule(text: str) -> Rule:
    """The rule ``text`` writes; :class:`RuleError` says what is wrong with it."""
    written = text.strip()
    if not written:
        raise RuleError("an empty permission rule: write TOOL or TOOL(PATTERN), "
                        "e.g. shell(git status *)")
    name, paren, rest = written.partition("(")
    name = name.strip()
    if not _TOOL_GLOB.fullmatch(name):
        raise RuleError(f"permission rule {text!r}: {name!r} is not a tool name or a glob "
                        "over tool names (letters, digits, _ . - * ?)")
    if not paren:
        return Rule(name)
    if not rest.endswith(")"):
        raise RuleError(f"permission rule {text!r}: the pattern must end with ')' "
                        "(write \\) for a literal one)")
    pattern = rest[:-1]
    problem = _unbalanced(pattern)
    if problem is not None:
        raise RuleError(f"permission rule {text!r}: {problem}")
    if not pattern.strip():
        raise RuleError(f"permission rule {text!r}: the pattern is empty; write {name} "
                        "alone for every call of it")
    return Rule(name, pattern.strip())


def _unbalanced(pattern: str) -> str | None:
    """What is wrong with the parentheses and escapes of ``pattern``, if anything."""
    depth, escaped = 0, False
    for char in pattern:
        if escaped:
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
            if depth < 0:
                return "unbalanced parentheses: a ')' closes nothing (write \\) for a literal one)"
    if escaped:
        return "the pattern ends with a lone backslash"
    if depth:
        return "unbalanced parentheses: a '(' is never closed (write \\( for a literal one)"
    return None


def literal(text: str) -> str:
    """``text`` as a pattern that matches exactly it: wildcards, backslashes and, where they
    do not pair up, parentheses escaped."""
    escape = "*?\\" if _pairs_up(text) else _SPECIAL
    return "".join("\\" + char if char in escape else char for char in text)


def _pairs_up(text: str) -> bool:
    """Whether the parentheses of ``text``, every one taken as written, pair up."""
    depth = 0
    for char in text:
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth < 0:
            return False
    return depth == 0
