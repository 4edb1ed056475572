"""Showing an agent at work in the terminal: streamed replies and tool results.

Everything here comes from a model or a tool, so all of it goes through
:func:`~fencecall.cli.visible.visible` first: escape sequences, carriage returns, bidi
overrides and zero-width characters are shown, not interpreted, and nothing is read as rich
markup or ``:emoji:`` codes.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.text import Text

from ..agent import AgentEvent, ReplyDone, ReplyText, Retrying, StepLimit, ToolResult
from ..message import Message
from .visible import visible, visible_text


class HonestMarkdown(Markdown):
    """Markdown that shows all of its text: the source goes through :func:`visible`, and so
    does every parsed token (character references such as ``&#x202E;`` decode to the very
    characters :func:`visible` removed); raw HTML, which rich would drop without a trace
    (``<!-- … -->``, ``<div>``), is shown as written; links show their address instead of
    hiding it behind a terminal hyperlink."""

    def __init__(self, markup: str, **options: Any) -> None:
        options.setdefault("hyperlinks", False)
        super().__init__(visible(markup), **options)
        _show_all(self.parsed)


def _show_all(tokens: Iterable[Any]) -> None:
    for token in tokens:
        if token.type == "html_block":
            token.type, token.tag, token.info = "code_block", "code", ""
        elif token.type == "html_inline":
            token.type = "text"
        token.content = visible(token.content)
        if token.info:
            token.info = visible(token.info)
        if token.attrs:
            token.attrs = {key: visible(value) if isinstance(value, str) else value
                           for key, value in token.attrs.items()}
        if token.children:
            _show_all(token.children)


class _StreamedMarkdown:
    """The reply so far, parsed as markdown only when Live repaints (a dozen times a second),
    not on every streamed token."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield HonestMarkdown("".join(self.parts))


class Display:
    """Renders agent events. On a terminal the reply is live-rendered markdown; elsewhere
    (pipes, logs) it is written as plain text as it arrives, made visible character by
    character (so a chunk boundary cannot split what it replaces)."""

    def __init__(self, console: Console):
        self.console = console
        self._live: Live | None = None
        self._reply = _StreamedMarkdown()

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ReplyText):
            self._reply_text(event.text)
        elif isinstance(event, ReplyDone):
            self._reply_done()
        elif isinstance(event, ToolResult):
            self.show_result(event.message)
        elif isinstance(event, Retrying):
            self._reply_done()  # what was shown of the broken reply stays; a new one follows
            self.console.print(visible_text(
                f"The reply stream broke ({event.reason}); retrying in {event.delay:g} s "
                f"(attempt {event.attempt} of {event.attempts}).", "yellow"))
        elif isinstance(event, StepLimit):
            self.console.print(f"[yellow]Stopped after {event.steps} steps (step limit).[/]")

    def _reply_text(self, text: str) -> None:
        self._reply.parts.append(text)
        if not self.console.is_terminal:
            self.console.file.write(visible(text))
            self.console.file.flush()
        elif self._live is None:
            self._live = Live(self._reply, console=self.console, refresh_per_second=12,
                              vertical_overflow="visible")
            self._live.start()

    def _reply_done(self) -> None:
        parts = self._reply.parts
        if self._live is not None:
            self._live.stop()  # paints the complete reply one last time
            self._live = None
        elif parts and not "".join(parts).endswith("\n"):
            self.console.file.write("\n")
        self._reply = _StreamedMarkdown()

    def show_result(self, message: Message) -> None:
        tool = message.tool or "system"
        style = "red" if message.failed else "cyan"
        self.console.rule(visible_text(str(tool), style), align="left", style=style)
        self.console.print(visible_text(message.content), highlight=False)
        self.console.rule(style=style)

    def show_message(self, message: Message) -> None:
        """A message from the log (for /log and resumed conversations)."""
        if message.role == "system":
            self.show_result(message)
            return
        label = Text("You" if message.role == "user" else "Assistant",
                     style="bold green" if message.role == "user" else "bold blue")
        self.console.print(label)
        self.console.print(HonestMarkdown(message.content) if message.role == "assistant"
                           else visible_text(message.content), highlight=False)
