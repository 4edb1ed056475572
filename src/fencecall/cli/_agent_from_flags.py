"""The agent a command line asks for: its settings from the flags, then a resumed log's
(as far as a log may widen nothing: see :func:`_restore`), then the environment and the
configuration; and where its questions, events and notes go (:class:`Frontend`)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from shlex import quote
from typing import Any

from ..agent import Agent, Conversation, EventSink
from ..assembly import NO_MODEL, NoModel, Overrides, RunSettings, assemble, resolve_settings
from ..config import Config
from ..errors import UserError
from ..parsing import FORMATS
from ..tools import ConfirmFunc, Toolchain
from ..tools.registry import is_file_entry
from ._arguments import SANDBOX_POLICIES
from .options import overrides_of
from .visible import visible
from .visible import warn as warn_on_stderr


def settle_resume(args: argparse.Namespace, config: Config) -> None:
    """``--continue``: the latest conversation, as if ``--resume`` had named it."""
    if getattr(args, "continue_latest", False):
        args.resume = Conversation.latest(config.home)


def _resumed(args: argparse.Namespace, config: Config, flags: Overrides,
             say: Say) -> tuple[Conversation | None, Overrides]:
    """The conversation ``--resume`` names, its notes said once, and what its remembered
    settings give the run where the command line says nothing, as far as :func:`_restore`
    allows."""
    if not args.resume:
        return None, Overrides()
    conversation = Conversation.open(config.home, args.resume)
    restored = _restore(conversation.settings, flags, resolve_settings(config, flags),
                        config.tool_packages, args.resume)
    for note in conversation.notes + restored.notes:
        say(f"note: {note}")
    said = f" with {', '.join(restored.applied)}" if restored.applied else ""
    say(f"resumed {conversation.name}{said}")
    say(f"{_spent(conversation, config)} (budgets and the time limit count from now)")
    if restored.refused:
        say(f"not restored from the log: {'; '.join(restored.refused)}")
    return conversation, restored.overrides


def say_on_stderr(text: str) -> None:
    """A note for the person running fencecall (a resumed conversation's, say)."""
    print(f"fencecall: {visible(text)}", file=sys.stderr)


Say = Callable[[str], None]
"""Where a note goes: :func:`say_on_stderr`, or a JSON line on stderr."""


@dataclass(frozen=True, slots=True)
class Frontend:
    """Where a run's questions, events, notes and warnings go: the terminal, or JSON."""

    confirm: ConfirmFunc
    on_event: EventSink
    say: Say = say_on_stderr
    warn: Say = warn_on_stderr


def _spent(conversation: Conversation, config: Config) -> str:
    """What the conversation spent so far, as ``fencecall stats`` counts it."""
    from ..agent.stats import collect

    stats = collect([conversation.messages], lambda model: config.model_settings(model).price)
    tokens = sum(sum(model.tokens.values()) for model in stats.models.values())
    cost = stats.cost
    money = "cost unknown" if cost is None else f"${cost:.4f}"
    return f"spent so far {tokens:,} tokens, {money}"


@dataclass
class Restored:
    """What a log's settings give the run (``overrides``, said as ``model=...``), what it
    asked for but did not get (with the flag that gives it), and what in it made no sense."""

    overrides: Overrides = field(default_factory=Overrides)
    applied: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _restore(saved: Mapping[str, Any], flags: Overrides, current: RunSettings,
             packages: Sequence[str], name: str) -> Restored:
    """The settings a log remembers that the command line (``flags``) leaves out, except what
    would let the model do more than this run (``current``, the settings without the log)
    does: the model may have written the log. So a sandbox looser than the current one, the
    network, extra roots, MCP servers (whose commands run at start) and tool files (whose
    code runs in this process) stay as the command line says; a workspace is taken only
    inside the folder this command would use. ``packages`` are the configured tool
    packages."""
    restored = Restored()
    given: dict[str, Any] = {}

    def value(key: str, valid: Callable[[Any], bool], expected: str) -> Any:
        """``saved[key]`` when it is valid; None, and a note, when it is there but not."""
        found = saved.get(key)
        if found is None or valid(found):
            return found
        restored.notes.append(f"the log's {key} ({repr(found)[:80]}) is not {expected}; "
                              "ignored")
        return None

    def apply(key: str, found: Any, shown: str) -> None:
        given[key] = found
        restored.applied.append(f"{key}={shown}")

    if flags.model is None and (model := value("model", _is_text, "text")):
        apply("model", model, model)
    if flags.format is None and (fmt := value("format", lambda v: _is_text(v) and v in FORMATS,
                                              f"one of {', '.join(FORMATS)}")):
        apply("format", fmt, fmt)
    if flags.tools is None and (tools := value("tools", _is_text, "text")) and (
            names := _restorable_tools(tools, current.tools, packages, restored)):
        apply("tools", names, ",".join(names))
    if flags.sandbox is None and (policy := value(
            "sandbox", lambda v: _is_text(v) and v in SANDBOX_POLICIES,
            f"one of {', '.join(SANDBOX_POLICIES)}")):
        if SANDBOX_POLICIES.index(policy) <= SANDBOX_POLICIES.index(current.sandbox):
            apply("sandbox", policy, policy)
        else:
            restored.refused.append(f"sandbox={policy} (pass --sandbox {policy} to use it)")
    if flags.network is None and value("network", lambda v: isinstance(v, bool),
                                       "true or false") and not current.network:
        restored.refused.append("network (pass --network to use it)")
    if flags.workspace is None and (folder := value("workspace", _is_text, "text")):
        workspace = _workspace_within(Path(folder), name)
        apply("workspace", workspace, str(workspace))
    if not flags.roots and (roots := value("roots", _is_texts, "a list of text")):
        shown = " ".join(f"--root {quote(root)}" for root in roots)
        restored.refused.append(f"roots {', '.join(roots)} (pass {shown} to use them)")
    if not flags.mcp and (servers := value("mcp", _is_texts, "a list of text")):
        restored.refused += [f"mcp server {text.partition('=')[0]!r} (pass --mcp "
                             f"{quote(text)} to use it)" for text in servers]
    restored.overrides = Overrides(**given)
    return restored


def _restorable_tools(tools: str, configured: Sequence[str] | None, packages: Sequence[str],
                      restored: Restored) -> tuple[str, ...]:
    """The log's tool list as far as it may be restored: no tool files (their code would run
    in this process), and nothing beyond the configured tools; what is left out is said in
    ``restored.refused``."""
    entries = [entry.strip() for entry in tools.split(",") if entry.strip()]
    restored.refused += [f"tool file {entry} (pass --tools {quote(tools)} to load it)"
                         for entry in entries if is_file_entry(entry)]
    names = [entry for entry in entries if not is_file_entry(entry)]
    if names and _within_configured(names, configured, packages):
        return tuple(names)
    if names:
        restored.refused.append(f"tools {','.join(names)}, more than the configured ones "
                                f"(pass --tools {quote(','.join(names))} to use them)")
    return ()


def _within_configured(entries: list[str], configured_list: Sequence[str] | None,
                       packages: Sequence[str]) -> bool:
    """Whether the tool list ``entries`` selects only tools the configured list selects (an
    entry no built-in, plugin or package tool answers, an MCP glob say, only if the
    configuration names it too): the log may narrow the tools, never widen them."""
    try:
        configured = set(Toolchain.build(configured_list, packages=packages).names())
        for entry in entries:
            selected = set(Toolchain.build([entry], packages=packages).names())
            if not selected <= configured or (
                    not selected and configured_list is not None
                    and entry not in configured_list):
                return False
    except UserError:  # an entry that names no tool
        return False
    return True


def _workspace_within(recorded: Path, name: str) -> Path:
    """The recorded workspace when it is the folder this command would work in, or inside
    it: the model may write there, so the log may narrow it but never move or widen it.
    Otherwise the user chooses, as silently working elsewhere would put the conversation's
    work in a folder it never saw."""
    here, there = Path.cwd().resolve(), recorded.resolve()
    if there != here and here not in there.parents:
        raise UserError(f"conversation {name!r} worked in {recorded}, but this command would "
                        f"work in {here}: pass --workspace {quote(str(recorded))} to continue "
                        f"there, or --workspace . to continue here")
    if there.exists() and not there.is_dir():
        raise UserError(f"conversation {name!r} worked in {recorded}, which is not a folder "
                        "now: pass --workspace to choose one")
    return there


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and value != "" and "\0" not in value


def _is_texts(value: Any) -> bool:
    return isinstance(value, list) and all(_is_text(item) for item in value)


def build_agent(args: argparse.Namespace, config: Config, frontend: Frontend) -> Agent:
    """The agent the command line asks for: its settings from the flags, then a resumed
    log's, then the environment and the configuration."""
    flags = overrides_of(args)
    if _interactive(args):
        if args.autonomous:
            raise UserError("--autonomous is for a prompt given on the command line or on "
                            "stdin (or fencecall batch): in an interactive chat you decide "
                            "when the task is done")
        flags = replace(flags, autonomous=False)
    resumed, restored = _resumed(args, config, flags, frontend.say)
    settings = resolve_settings(config, flags, restored, ask_server=True)
    if settings.model is None:
        raise NoModel(NO_MODEL)
    tools = args.tools or (",".join(restored.tools) if restored.tools else None)

    def logged() -> Conversation:
        conversation = resumed or Conversation.create(config.home, args.name)
        conversation.remember({
            "model": settings.model, "format": settings.format.name, "tools": tools,
            "workspace": str(settings.workspace),
            "roots": [str(r) for r in settings.roots[1:]], "sandbox": str(settings.sandbox),
            "mcp": list(args.mcp), "network": settings.network})
        return conversation

    return assemble(settings, config, confirm=frontend.confirm, conversation=logged,
                    on_event=frontend.on_event, warn=frontend.warn)


def _interactive(args: argparse.Namespace) -> bool:
    """Whether the command opens a chat: no prompt, neither as arguments nor on stdin."""
    return not args.prompt and sys.stdin.isatty()
