"""Slash commands in the chat: /help, /tools, /undo, /rewind, /log, /image, /exit and tools'
own commands; and images attached by a path dropped into the prompt."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ..agent import Agent
from ..agent.stats import collect
from ..images import is_image_file, load, scratch_folder
from ._rewind import conversation_turns, edited_question, go_back, turn_lines
from ._tools_cmd import server_lines
from .display import Display
from .visible import visible_text


class ExitChat(Exception):
    """Raised by /exit."""


@dataclass(frozen=True, slots=True)
class Slash:
    help: str
    run: Callable[[Agent, Display, str], None]


def _help(agent: Agent, display: Display, arg: str) -> None:
    for name, command in COMMANDS.items():
        display.console.print(f"/{name:<8} {command.help}", markup=False)
    for spec in agent.session.toolchain.tools:
        for tool_command in spec.commands:
            display.console.print(visible_text(f"/{tool_command.name:<8} {tool_command.help} "
                                               f"({spec.name})"))


def _tools(agent: Agent, display: Display, arg: str) -> None:
    for spec in agent.session.toolchain.tools:
        tags = ", ".join(spec.block_types)
        display.console.print(visible_text(f"{spec.name:<10} {spec.desc}  [{tags}]"))


def _undo(agent: Agent, display: Display, arg: str) -> None:
    try:
        count = int(arg) if arg else 1
    except ValueError:
        count = 0
    if count < 1:
        display.console.print("usage: /undo [N]: undo the last N turns (default 1)",
                              markup=False)
        return
    found = conversation_turns(agent.conversation, agent.session.checkpoints)
    if count > len(found):
        have = (f"there {'is' if len(found) == 1 else 'are'} only {len(found)}" if found
                else "there are none yet")
        all_of = f"; /undo {len(found)} undoes them all" if found else ""
        display.console.print(f"Nothing was undone: you asked to undo {count} "
                              f"turn{'' if count == 1 else 's'}, but "
                              f"{have}{all_of} (/rewind lists them).", markup=False)
        return
    _go_back(agent, display, len(found) - count + 1)


def _rewind(agent: Agent, display: Display, arg: str) -> None:
    found = conversation_turns(agent.conversation, agent.session.checkpoints)
    if not found:
        display.console.print("No turns yet.", markup=False)
        return
    if not arg:
        for line in turn_lines(found):
            display.console.print(visible_text(line))
        answer = _ask(display, f"Go back to before which turn? (1-{len(found)}, Enter: "
                               "none) ")
        if answer is None:
            display.console.print("/rewind TURN goes back to before that turn.", markup=False)
        if not answer or not answer.strip():
            return
        arg = answer.strip()
    if not arg.isdigit() or not 1 <= int(arg) <= len(found):
        display.console.print(f"usage: /rewind [TURN], a turn from 1 to {len(found)}",
                              markup=False)
        return
    _go_back(agent, display, int(arg))


def _go_back(agent: Agent, display: Display, number: int) -> None:
    def overwrite(paths: list[str]) -> bool:
        answer = _ask(display, edited_question(paths))
        return answer is not None and answer.strip().lower() in ("y", "yes")

    for line in go_back(agent.conversation, agent.session.checkpoints, number, overwrite):
        display.console.print(visible_text(line))


def _ask(display: Display, question: str) -> str | None:
    """The person's answer (end of input: empty); None where nobody can be asked here (an
    editor's session, whose input is the protocol)."""
    if not display.console.is_terminal:
        return None
    try:
        return display.console.input(visible_text(question))
    except EOFError:
        return ""


def _log(agent: Agent, display: Display, arg: str) -> None:
    display.console.print(f"Conversation {agent.conversation.name} "
                          f"({agent.conversation.path})", markup=False)
    for message in agent.conversation.messages:
        display.show_message(message)


def _usage(agent: Agent, display: Display, arg: str) -> None:
    from ._stats_cmd import show

    pricing = agent.billing.spend.pricing  # the configured price of the run's model, if any
    show(collect([agent.conversation.messages],
                 lambda key: pricing.configured if key == pricing.key else None),
         display.console, f"conversation {agent.conversation.name}")


def _compact(agent: Agent, display: Display, arg: str) -> None:
    marker = agent.compact(keep=0)
    if marker is None:
        display.console.print("Nothing to compact: the conversation holds the task and its "
                              "latest exchange only.", markup=False)
        return
    display.console.print(visible_text(
        f"Compacted: {marker.content.splitlines()[0]} (the log keeps every message; /log "
        "shows them)"))


def _mcp(agent: Agent, display: Display, arg: str) -> None:
    servers = agent.session.mcp_servers
    if not servers:
        display.console.print("No MCP servers are configured ([mcp.servers.NAME] in the "
                              "config file, or --mcp NAME=COMMAND).", markup=False)
        return
    for line in server_lines(servers):
        display.console.print(visible_text(line))


def _image(agent: Agent, display: Display, arg: str) -> None:
    path = _image_path(_unquoted(arg), agent.session.workspace) if arg else None
    if path is None:
        display.console.print(visible_text(
            f"{'No image at ' + arg + '. ' if arg else ''}/image PATH attaches a png, jpeg, "
            "gif or webp file to your next message."))
        return
    _attach(agent, display, path)


def _unquoted(text: str) -> str:
    """A path as a terminal drops it: in quotes, or with its spaces escaped."""
    text = text.strip()
    if len(text) > 1 and text[0] == text[-1] and text[0] in "'\"":
        return text[1:-1]
    return text.replace("\\ ", " ")


def _image_path(given: str, workspace: Path) -> Path | None:
    """The image file ``given`` names (relative: to the current folder, else the
    workspace), or None."""
    path = Path(given).expanduser()
    for found in ((path,) if path.is_absolute() else (Path.cwd() / path, workspace / path)):
        if is_image_file(found):
            return found
    return None


def _attach(agent: Agent, display: Display, path: Path) -> None:
    try:
        image = load(path, scratch_folder())
    except (OSError, ValueError) as err:
        display.console.print(visible_text(f"Not attached: {err}", "red"))
        return
    agent.attachments.append(image)
    note = "" if agent.settings.vision else " (this model takes no images: it gets a note)"
    display.console.print(visible_text(
        f"Attached {path} ({image.width}×{image.height}) to your next message{note}."))  # noqa: RUF001


def is_command(line: str, agent: Agent) -> bool:
    """Whether ``line`` is a slash command, not a prompt that starts with an image's
    absolute path (a file dropped into the terminal)."""
    first = line.split(maxsplit=1)[0] if line.strip() else ""
    return line.startswith("/") and _image_path(
        _unquoted(line), agent.session.workspace) is None and _image_path(
        first, agent.session.workspace) is None


def attach_dropped(line: str, agent: Agent, display: Display) -> None:
    """Attach the images a prompt names: the whole prompt, or a word of it, that is the path
    of an image file (as dragging a file into a terminal types it)."""
    try:
        words = shlex.split(line)
    except ValueError:  # an unpaired quote: a prompt, not a command line
        words = line.split()
    found: dict[Path, None] = {}
    for word in (_unquoted(line), *words):
        path = _image_path(word, agent.session.workspace) if word else None
        if path is not None:
            found[path.resolve()] = None
    for path in found:
        _attach(agent, display, path)


def _exit(agent: Agent, display: Display, arg: str) -> None:
    raise ExitChat


COMMANDS: dict[str, Slash] = {
    "help": Slash("show the commands", _help),
    "tools": Slash("list the loaded tools", _tools),
    "undo": Slash("undo the last N turns (default 1): messages and file changes", _undo),
    "rewind": Slash("list the turns and go back to before one", _rewind),
    "log": Slash("show the conversation so far", _log),
    "mcp": Slash("the MCP servers and their state", _mcp),
    "usage": Slash("tools' failures and durations, tokens and cost so far", _usage),
    "image": Slash("attach an image file to your next message (or drop its path in)", _image),
    "compact": Slash("replace all but the latest exchange by the model's summary", _compact),
    "exit": Slash("leave the chat (also /quit, Ctrl-D)", _exit),
    "quit": Slash("leave the chat", _exit),
}


def run_slash(line: str, agent: Agent, display: Display) -> None:
    name, _, arg = line[1:].partition(" ")
    command = COMMANDS.get(name)
    if command is not None:
        command.run(agent, display, arg.strip())
        return
    output = agent.session.run_command(line)
    if output is None:
        display.console.print(visible_text(f"Unknown command /{name}; /help lists them."))
    elif output:
        display.console.print(visible_text(output))
