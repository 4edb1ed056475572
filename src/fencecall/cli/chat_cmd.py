"""``fencecall [PROMPT]`` / ``fencecall chat``: talk to a model that uses tools.

With a prompt it works until the model is done and exits; without one it opens an
interactive chat (prompt_toolkit input with history, rich rendering, slash commands).
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from shlex import quote
from typing import Any

from rich.console import Console

from .. import telemetry
from ..agent import Agent, Conversation, Outcome
from ..agent.conversation import PRIVATE_FILE, private_folder
from ..agent.settings import Overrides, resolve
from ..config import Config, ConfigError, load_config
from ..errors import UserError
from ..parsing import FORMATS
from ..providers import ProviderError, get_provider
from ..tools import Toolchain
from ..tools.registry import is_file_entry
from .arguments import SANDBOX_POLICIES
from .confirm import choose_confirm
from .display import Display
from .options import session_of
from .slash import ExitChat, run_slash
from .title import show_running_tools
from .visible import visible, visible_text

EXIT_CODES = {Outcome.DONE: 0, Outcome.STEP_LIMIT: 1, Outcome.GAVE_UP: 1,
              Outcome.INTERRUPTED: 130}
"""Without a person at the chat, how the work ended is the exit status."""


def list_conversations(args: argparse.Namespace) -> int:
    config = load_config()
    console = Console(highlight=False)
    infos = Conversation.list_all(config.home)
    if not infos:
        console.print(f"No conversations yet in {Conversation.logs_dir(config.home)}.")
    for info in infos:
        console.print(visible_text(f"{info.name}  {info.modified:%Y-%m-%d %H:%M}  "
                                   f"{info.messages:>4} msgs  {info.first_prompt[:60]}"))
    return 0


def _resumed(args: argparse.Namespace, config: Config) -> Conversation | None:
    """The conversation ``--resume`` names, its notes said once; its remembered settings fill
    in the options the command line leaves out, as far as :func:`_restore` allows."""
    if not args.resume:
        return None
    conversation = Conversation.open(config.home, args.resume)
    restored = _restore(conversation.settings, args, config)
    for note in conversation.notes + restored.notes:
        print(f"fencecall: note: {visible(note)}", file=sys.stderr)
    said = f" with {', '.join(restored.applied)}" if restored.applied else ""
    print(f"fencecall: resumed {conversation.name}{visible(said)}", file=sys.stderr)
    if restored.refused:
        print(f"fencecall: not restored from the log: {visible('; '.join(restored.refused))}",
              file=sys.stderr)
    return conversation


@dataclass
class Restored:
    """What a log's settings record gave the options (``model=...``), what it asked for but
    did not get (with the flag that gives it), and what in it made no sense."""

    applied: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _restore(saved: Mapping[str, Any], args: argparse.Namespace, config: Config) -> Restored:
    """Fill the options the command line leaves out from a log's settings, except what would
    let the model do more than this command line does: the model may have written the log.
    So a sandbox looser than the configured one, the network, extra roots, MCP servers (whose
    commands run at start) and tool files (whose code runs in this process) stay as the
    command line says; a workspace is taken only inside the folder this command would use."""
    restored = Restored()

    def value(key: str, valid: Callable[[Any], bool], expected: str) -> Any:
        """``saved[key]`` when it is valid; None, and a note, when it is there but not."""
        found = saved.get(key)
        if found is None or valid(found):
            return found
        restored.notes.append(f"the log's {key} ({repr(found)[:80]}) is not {expected}; "
                              "ignored")
        return None

    if args.model is None and (model := value("model", _is_text, "text")):
        args.model = model
        restored.applied.append(f"model={model}")
    if args.format is None and (fmt := value("format", lambda v: _is_text(v) and v in FORMATS,
                                             f"one of {', '.join(FORMATS)}")):
        args.format = fmt
        restored.applied.append(f"format={fmt}")
    if args.tools is None and (tools := value("tools", _is_text, "text")):
        entries = [entry.strip() for entry in tools.split(",") if entry.strip()]
        restored.refused += [f"tool file {entry} (pass --tools {quote(tools)} to load it)"
                             for entry in entries if is_file_entry(entry)]
        names = [entry for entry in entries if not is_file_entry(entry)]
        if names and _within_configured(names, config):
            args.tools = ",".join(names)
            restored.applied.append(f"tools={args.tools}")
        elif names:
            restored.refused.append(f"tools {','.join(names)}, more than the configured ones "
                                    f"(pass --tools {quote(','.join(names))} to use them)")
    if args.sandbox is None and (policy := value(
            "sandbox", lambda v: _is_text(v) and v in SANDBOX_POLICIES,
            f"one of {', '.join(SANDBOX_POLICIES)}")):
        if SANDBOX_POLICIES.index(policy) <= SANDBOX_POLICIES.index(config.sandbox):
            args.sandbox = policy
            restored.applied.append(f"sandbox={policy}")
        else:
            restored.refused.append(f"sandbox={policy} (pass --sandbox {policy} to use it)")
    if args.network is None and value("network", lambda v: isinstance(v, bool),
                                      "true or false") and not config.network:
        restored.refused.append("network (pass --network to use it)")
    if args.workspace is None and (folder := value("workspace", _is_text, "text")):
        args.workspace = _workspace_within(Path(folder), args.resume)
        restored.applied.append(f"workspace={args.workspace}")
    if not args.root and (roots := value("roots", _is_texts, "a list of text")):
        flags = " ".join(f"--root {quote(root)}" for root in roots)
        restored.refused.append(f"roots {', '.join(roots)} (pass {flags} to use them)")
    if not args.mcp and (servers := value("mcp", _is_texts, "a list of text")):
        restored.refused += [f"mcp server {text.partition('=')[0]!r} (pass --mcp "
                             f"{quote(text)} to use it)" for text in servers]
    return restored


def _within_configured(entries: list[str], config: Config) -> bool:
    """Whether the tool list ``entries`` selects only tools the configured list selects (an
    entry no built-in, plugin or package tool answers, an MCP glob say, only if the
    configuration names it too): the log may narrow the tools, never widen them."""
    packages = config.tool_packages
    try:
        configured = set(Toolchain.build(config.tools, packages=packages).names())
        for entry in entries:
            selected = set(Toolchain.build([entry], packages=packages).names())
            if not selected <= configured or (
                    not selected and config.tools is not None and entry not in config.tools):
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


def build_agent(args: argparse.Namespace, config: Config, console: Console,
                display: Display) -> Agent:
    resumed = _resumed(args, config)
    chosen: str | None = args.model or config.model
    if not chosen:
        raise ConfigError("no model configured: pass --model provider/name or set "
                          "FENCECALL_MODEL (e.g. openai/gpt-4o, local/qwen2.5)")
    retries = config.retries if args.retries is None else args.retries
    provider, _ = get_provider(chosen, config, timeout=args.timeout, retries=retries)
    session = session_of(args, config, choose_confirm(console, yes=args.yes),
                         args.format or config.format, config.tools)
    conversation = resumed or Conversation.create(config.home, args.name)
    conversation.remember({
        "model": chosen, "format": session.format.name, "tools": args.tools,
        "workspace": str(session.workspace), "roots": [str(r) for r in session.roots[1:]],
        "sandbox": str(args.sandbox or config.sandbox), "mcp": list(args.mcp),
        "network": bool(args.network or config.network)})
    flags = Overrides(max_steps=args.max_steps, max_tokens=args.max_tokens,
                      retries=args.retries, temperature=args.temperature, top_p=args.top_p,
                      stop=tuple(args.stop or ()), context_window=args.context_window,
                      prompt=args.prompt_mode)
    return Agent.configured(resolve(config, chosen, flags, ask_server=True), provider,
                            session, conversation, on_event=display)


def run(args: argparse.Namespace) -> int:
    config = load_config()
    with telemetry.using(telemetry.from_settings(config.telemetry,
                                                 content=config.telemetry_content)):
        return _run(args, config)


def _run(args: argparse.Namespace, config: Config) -> int:
    console = Console(highlight=False)
    display = Display(console)
    agent = build_agent(args, config, console, display)
    outcome = Outcome.DONE
    try:
        if args.prompt:
            outcome = agent.send(" ".join(args.prompt))
        elif not sys.stdin.isatty():
            prompt = sys.stdin.read().strip()
            if prompt:
                outcome = agent.send(prompt)
            elif agent.conversation.messages:
                outcome = agent.resume()
        else:
            interactive(agent, display, config)
    except ProviderError as err:
        console.print(visible_text(str(err), "red"))
        return 1
    finally:
        agent.session.close()
        agent.conversation.close()
    return EXIT_CODES[outcome]


def interactive(agent: Agent, display: Display, config: Config) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    private_folder(config.home)
    history = config.home / "history"
    os.close(os.open(history, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
    os.chmod(history, PRIVATE_FILE)
    prompt: PromptSession[str] = PromptSession(history=FileHistory(str(history)))
    console = display.console
    show_running_tools(agent.session.hooks, console)
    console.print(f"fencecall: conversation [bold]{agent.conversation.name}[/], model "
                  f"{agent.model}, tools: {', '.join(agent.session.toolchain.names())}. "
                  "/help for commands, Ctrl-D to leave.")
    for message in agent.conversation.messages:
        display.show_message(message)
    while True:
        try:
            line = prompt.prompt("> ").strip()
        except KeyboardInterrupt:
            continue
        except EOFError:
            return
        if not line:
            continue
        try:
            if line.startswith("/"):
                run_slash(line, agent, display)
            else:
                agent.send(line)
        except ExitChat:
            return
        except ProviderError as err:
            console.print(visible_text(str(err), "red"))
        except KeyboardInterrupt:
            console.print("[yellow]Interrupted.[/]")
