"""The chat's input line: Enter sends, Alt-Enter (or Esc then Enter) starts a new line, and
Tab completes a slash command, built-in or a tool's."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from prompt_toolkit import PromptSession
from prompt_toolkit.completion import CompleteEvent, Completer, Completion
from prompt_toolkit.document import Document
from prompt_toolkit.history import FileHistory
from prompt_toolkit.key_binding import KeyBindings, KeyPressEvent

if TYPE_CHECKING:
    from ..agent import Agent


def chat_prompt(history: Path, agent: Agent) -> PromptSession[str]:
    """The prompt session of an interactive chat, its history kept in ``history``."""
    keys = KeyBindings()

    @keys.add("enter")
    @keys.add("c-j")  # what a terminal that does not translate the line end sends
    def _send(event: KeyPressEvent) -> None:
        event.current_buffer.validate_and_handle()

    @keys.add("escape", "enter")
    @keys.add("escape", "c-j")
    def _new_line(event: KeyPressEvent) -> None:
        event.current_buffer.insert_text("\n")

    return PromptSession(history=FileHistory(str(history)), multiline=True, key_bindings=keys,
                         completer=SlashCompleter(lambda: slash_names(agent)),
                         complete_while_typing=False, prompt_continuation=". ")


def slash_names(agent: Agent) -> list[str]:
    """Every slash command this chat answers: the built-in ones, then the tools'."""
    from .slash import COMMANDS

    tools = [command.name for spec in agent.session.toolchain.tools for command in spec.commands]
    return [*COMMANDS, *tools]


_Names = Callable[[], Iterable[str]]


class SlashCompleter(Completer):
    """Completes the command word of a line that starts with ``/``, and nothing else: text
    meant for the model is never rewritten."""

    def __init__(self, names: _Names):
        self._names = names

    def get_completions(self, document: Document,
                        complete_event: CompleteEvent) -> Iterator[Completion]:
        before = document.text_before_cursor
        if not before.startswith("/") or any(char.isspace() for char in before):
            return
        word = before[1:]
        for name in self._names():
            if name.startswith(word):
                yield Completion(f"/{name}", start_position=-len(before))
