"""``fencecall [PROMPT]`` / ``fencecall chat``: talk to a model that uses tools.

With a prompt it works until the model is done and exits; without one it opens an
interactive chat (prompt_toolkit input with history, rich rendering, slash commands).
"""

from __future__ import annotations

import argparse
import sys

from rich.console import Console

from ..agent import Agent, Conversation
from ..config import Config, ConfigError, load_config
from ..execution import Session
from ..providers import ProviderError, get_provider
from .confirm import choose_confirm
from .display import Display
from .options import toolchain_of, workspace_of
from .slash import ExitChat, run_slash


def list_conversations(args: argparse.Namespace) -> int:
    config = load_config()
    console = Console(highlight=False)
    infos = Conversation.list_all(config.home)
    if not infos:
        console.print(f"No conversations yet in {Conversation.logs_dir(config.home)}.")
    for info in infos:
        console.print(f"{info.name}  {info.modified:%Y-%m-%d %H:%M}  {info.messages:>4} msgs  "
                      f"{info.first_prompt[:60]}", markup=False)
    return 0


def _conversation(args: argparse.Namespace, config: Config) -> Conversation:
    if args.resume:
        return Conversation.open(config.home, args.resume)
    return Conversation.create(config.home, args.name)


def build_agent(args: argparse.Namespace, config: Config, console: Console,
                display: Display) -> Agent:
    chosen: str | None = args.model or config.model
    if not chosen:
        raise ConfigError("no model configured: pass --model provider/name or set "
                          "FENCECALL_MODEL (e.g. openai/gpt-4o, local/qwen2.5)")
    provider, model = get_provider(chosen, config)
    workspace = workspace_of(args)
    toolchain = toolchain_of(args, workspace, config.tools)
    session = Session(toolchain, workspace=workspace,
                      confirm=choose_confirm(console, yes=args.yes),
                      fmt=args.format or config.format, extra_roots=args.root,
                      hidden_env=config.secret_env_names())
    return Agent(provider, model, session, _conversation(args, config),
                 max_steps=args.max_steps or config.max_steps, on_event=display)


def run(args: argparse.Namespace) -> int:
    config = load_config()
    console = Console(highlight=False)
    display = Display(console)
    agent = build_agent(args, config, console, display)
    try:
        if args.prompt:
            agent.send(" ".join(args.prompt))
        elif not sys.stdin.isatty():
            prompt = sys.stdin.read().strip()
            if prompt:
                agent.send(prompt)
            elif agent.conversation.messages:
                agent.resume()
        else:
            interactive(agent, display, config)
    except ProviderError as err:
        console.print(f"[red]{err}[/]")
        return 1
    finally:
        agent.session.close()
        agent.conversation.close()
    return 0


def interactive(agent: Agent, display: Display, config: Config) -> None:
    from prompt_toolkit import PromptSession
    from prompt_toolkit.history import FileHistory

    config.home.mkdir(parents=True, exist_ok=True)
    prompt: PromptSession[str] = PromptSession(history=FileHistory(str(config.home / "history")))
    console = display.console
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
            console.print(f"[red]{err}[/]")
        except KeyboardInterrupt:
            console.print("[yellow]Interrupted.[/]")
