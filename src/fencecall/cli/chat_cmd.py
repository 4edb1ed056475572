"""``fencecall [PROMPT]`` / ``fencecall chat``: talk to a model that uses tools.

With a prompt it works until the model is done and exits; without one it opens an
interactive chat (prompt_toolkit input with history, rich rendering, slash commands).
"""

from __future__ import annotations

import argparse
import os
import sys
from dataclasses import replace
from pathlib import Path

from rich.console import Console

from .. import telemetry
from ..agent import Agent, Conversation, Outcome
from ..agent.conversation import PRIVATE_FILE, private_folder
from ..config import Config, ConfigError, Sampling, load_config
from ..providers import ProviderError, get_provider
from ..providers.served import served_context_window
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
    in every option the command line leaves out."""
    if not args.resume:
        return None
    conversation = Conversation.open(config.home, args.resume)
    for note in conversation.notes:
        print(f"fencecall: note: {visible(note)}", file=sys.stderr)
    saved = conversation.settings
    for option in ("model", "format", "tools", "sandbox", "network"):
        if getattr(args, option) is None and saved.get(option) is not None:
            setattr(args, option, saved[option])
    if args.workspace is None and saved.get("workspace"):
        args.workspace = Path(saved["workspace"])
    if not args.root and saved.get("roots"):
        args.root = [Path(root) for root in saved["roots"]]
    if not args.mcp and saved.get("mcp"):
        args.mcp = list(saved["mcp"])
    return conversation


def build_agent(args: argparse.Namespace, config: Config, console: Console,
                display: Display) -> Agent:
    resumed = _resumed(args, config)
    chosen: str | None = args.model or config.model
    if not chosen:
        raise ConfigError("no model configured: pass --model provider/name or set "
                          "FENCECALL_MODEL (e.g. openai/gpt-4o, local/qwen2.5)")
    retries = config.retries if args.retries is None else args.retries
    provider, model = get_provider(chosen, config, timeout=args.timeout,
                                   retries=retries)
    session = session_of(args, config, choose_confirm(console, yes=args.yes),
                         args.format or config.format, config.tools)
    conversation = resumed or Conversation.create(config.home, args.name)
    conversation.remember({
        "model": chosen, "format": session.format.name, "tools": args.tools,
        "workspace": str(session.workspace), "roots": [str(r) for r in session.roots[1:]],
        "sandbox": str(args.sandbox or config.sandbox), "mcp": list(args.mcp),
        "network": bool(args.network or config.network)})
    settings = config.model_settings(chosen)
    sampling = Sampling(
        args.temperature if args.temperature is not None else settings.sampling.temperature,
        args.top_p if args.top_p is not None else settings.sampling.top_p,
        tuple(args.stop) if args.stop else settings.sampling.stop)
    window = args.context_window or settings.context_window
    served = config.providers.get(chosen.partition("/")[0])
    if window is None and served is not None and served.kind == "openai" and served.base_url:
        window = served_context_window(served.base_url, model)  # a self-hosted server
    mode = args.prompt_mode or replace(settings, context_window=window).prompt_mode()
    max_tokens = args.max_tokens or settings.max_tokens or (
        min(config.max_tokens, window // 4) if window else config.max_tokens)
    return Agent(provider, model, session, conversation,
                 max_steps=args.max_steps or config.max_steps, max_tokens=max_tokens,
                 retries=retries, on_event=display, feedback_limit=config.near_misses,
                 sampling=sampling, compact=mode == "compact", context_window=window)


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
