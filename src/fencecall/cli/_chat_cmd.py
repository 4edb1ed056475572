"""``fencecall [PROMPT]`` / ``fencecall chat``: talk to a model that uses tools.

With a prompt it works until the model is done and exits; without one it opens an
interactive chat (prompt_toolkit input with history, rich rendering, slash commands). A run
with a prompt may be autonomous (``--autonomous``, config ``autonomous``: only the complete
tool ends it done); a chat never is, since the person in it decides when the task is done.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from rich.console import Console

from .. import telemetry
from ..agent import Agent, Conversation
from ..agent.conversation import PRIVATE_FILE, private_folder
from ..config import Config, load_config
from ..message import Outcome
from ..providers import ProviderError
from ..tools.builtin.jobs import listing
from ._agent_from_flags import Frontend, build_agent, settle_resume
from ._inputs import piped_prompt
from ._title import show_running_tools
from .confirm_prompt import choose_confirm
from .display import Display
from .slash import ExitChat, attach_dropped, is_command, run_slash
from .visible import visible_text


def list_conversations(args: argparse.Namespace) -> int:
    config = load_config()
    console = Console(highlight=False)
    if args.delete:
        for name in args.delete:
            Conversation.open(config.home, name)  # every name checked before any is deleted
        for name in args.delete:
            Conversation.delete(config.home, name)
            console.print(visible_text(f"Deleted {name}."))
        return 0
    infos = Conversation.list_all(config.home)
    if args.json:
        for info in infos:
            print(json.dumps({"name": info.name, "modified": info.modified.isoformat(),
                              "messages": info.messages, "first_prompt": info.first_prompt}))
        return 0
    if not infos:
        console.print(f"No conversations yet in {Conversation.logs_dir(config.home)}.")
    for info in infos:
        console.print(visible_text(f"{info.name}  {info.modified:%Y-%m-%d %H:%M}  "
                                   f"{info.messages:>4} msgs  {info.first_prompt[:60]}"))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.output_format != "text" or args.input_format != "text":
        from ._headless import run_headless

        return run_headless(args)
    config = load_config()
    settle_resume(args, config)
    with telemetry.using(telemetry.from_settings(config.telemetry,
                                                 content=config.telemetry_content)):
        return _run(args, config)


def _run(args: argparse.Namespace, config: Config) -> int:
    console = Console(highlight=False)
    display = Display(console)
    piped = None if args.prompt or sys.stdin.isatty() else piped_prompt(resuming=bool(args.resume))
    agent = build_agent(args, config, Frontend(display.asking(choose_confirm(console,
                                                                          yes=args.yes)),
                                               display))
    outcome = Outcome.DONE
    try:
        if args.prompt:
            outcome = agent.send(" ".join(args.prompt))
        elif piped is not None:
            if piped:
                outcome = agent.send(piped)
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
    return outcome.exit_code  # without a person at the chat, how the work ended


def interactive(agent: Agent, display: Display, config: Config) -> None:
    from ._chat_input import chat_prompt

    private_folder(config.home)
    history = config.home / "history"
    os.close(os.open(history, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
    os.chmod(history, PRIVATE_FILE)
    prompt = chat_prompt(history, agent)
    console = display.console
    show_running_tools(agent.session.hooks, console)
    display.lively, display.price = True, agent.billing.spend.pricing.cost
    display.watch(agent.session.hooks)
    console.print(f"fencecall: conversation [bold]{agent.conversation.name}[/], model "
                  f"{agent.model}, tools: {', '.join(agent.session.toolchain.names())}. "
                  "/help for commands (Tab completes them), Alt-Enter for a new line, "
                  "Ctrl-D to leave.")
    for message in agent.conversation.messages:
        display.show_message(message)
    while True:
        try:
            line = prompt.prompt("> ").strip()
        except KeyboardInterrupt:
            continue
        except EOFError:
            if _may_leave(agent, console):
                return
            continue
        if not line:
            continue
        try:
            if is_command(line, agent):
                run_slash(line, agent, display)
            else:
                attach_dropped(line, agent, display)
                _send(agent, display, line)
        except ExitChat:
            if _may_leave(agent, console):
                return
        except ProviderError as err:
            console.print(visible_text(str(err), "red"))
        except KeyboardInterrupt:
            console.print("[yellow]Interrupted.[/]")


def _send(agent: Agent, display: Display, line: str) -> None:
    """Send ``line``, the status line showing until the reply streams."""
    display.turn()
    try:
        with _output_kept_on_interrupt():
            agent.send(line)
    finally:
        display.idle()


@contextmanager
def _output_kept_on_interrupt() -> Iterator[None]:
    """The terminal as the reply streams: Ctrl-C neither discards output on its way (a
    repaint of the live region cut in half leaves copies of its lines) nor echoes ``^C``
    into it."""
    try:
        import termios

        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
    except (ImportError, OSError, ValueError):  # not a terminal (or not a POSIX one)
        yield
        return
    steady = list(saved)
    steady[3] = (steady[3] | termios.NOFLSH) & ~termios.ECHOCTL
    termios.tcsetattr(fd, termios.TCSANOW, steady)
    try:
        yield
    finally:
        termios.tcsetattr(fd, termios.TCSANOW, saved)


def _may_leave(agent: Agent, console: Console) -> bool:
    """Whether the chat may end: leaving stops the running background jobs, so they are
    listed and the person asked (no: the chat goes on)."""
    running = agent.session.running_jobs()
    if not running:
        return True
    console.print(visible_text(listing(running)))
    try:
        answer = console.input(f"Leaving stops {'it' if len(running) == 1 else 'them'}. "
                               "Stop and leave? \\[y/N] ")
    except EOFError:
        return True  # no one left to answer
    return answer.strip().lower() in ("y", "yes")
