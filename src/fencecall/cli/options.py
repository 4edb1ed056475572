"""What the command line says, as one source of a run's settings.

Each command has some of the flags; :func:`overrides_of` reads those it has into an
:class:`~fencecall.assembly.Overrides`, the most specific source the resolver is given.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from ..assembly import Overrides
from ..errors import UserError
from ..tools.permission_rules import Rule, parse_rule

if TYPE_CHECKING:
    from ..tools.mcp import McpServerConfig


def overrides_of(args: argparse.Namespace) -> Overrides:
    """The settings the flags of ``args`` set (None where a flag was not given). A command
    without ``--autonomous`` (``run``, ``tools``, ``mcp serve``) runs no model of its own, so
    it is never autonomous: the complete tool is not among its tools, whatever the
    configuration says."""

    def flag(name: str) -> Any:
        return getattr(args, name, None)

    tools = flag("tools")
    return Overrides(
        model=flag("model"), format=flag("format"),
        tools=tuple(entry.strip() for entry in tools.split(",") if entry.strip())
        if tools else None,
        max_steps=flag("max_steps"), max_tokens=flag("max_tokens"), retries=flag("retries"),
        temperature=flag("temperature"), top_p=flag("top_p"),
        stop=tuple(flag("stop") or ()), context_window=flag("context_window"),
        prompt=flag("prompt_mode"), request_timeout=flag("request_timeout"),
        workspace=flag("workspace"),
        roots=tuple(flag("root") or ()), sandbox=flag("sandbox"), network=flag("network"),
        mcp=mcp_declarations_of(args), budget_usd=flag("budget_usd"),
        budget_tokens=flag("budget_tokens"), time_limit=flag("time_limit"),
        autonomous=flag("autonomous") if "autonomous" in vars(args) else False,
        compaction=flag("compaction"), background_after=flag("background_after"),
        logprobs=flag("logprobs"), environment=flag("environment"),
        container_cli=flag("container_cli"),
        allow=rules_of(args, "allow"), deny=rules_of(args, "deny"))


def rules_of(args: argparse.Namespace, which: str) -> tuple[Rule, ...]:
    """The rules of ``--allow`` or ``--deny`` (``which``); a malformed one is a UserError."""
    return tuple(parse_rule(text) for text in getattr(args, which, None) or ())


def mcp_declarations_of(args: argparse.Namespace) -> tuple[McpServerConfig, ...]:
    """The servers of ``--mcp NAME=COMMAND`` (each replaces a configured one of its name)."""
    given = getattr(args, "mcp", None) or ()
    if not given:
        return ()
    from ..tools.mcp import DeclarationError, from_command_line  # for a run that has some

    declared: dict[str, McpServerConfig] = {}
    for text in given:
        try:
            server = from_command_line(text)
        except DeclarationError as err:
            raise UserError(str(err)) from None
        declared[server.name] = server
    return tuple(declared.values())

