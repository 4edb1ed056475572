"""Showing an agent at work in the terminal: streamed replies and tool results."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.markup import escape

from ..agent import AgentEvent, ReplyDone, ReplyText, StepLimit, ToolResult
from ..message import Message


class _StreamedMarkdown:
    """The reply so far, parsed as markdown only when Live repaints (a dozen times a second),
    not on every streamed token."""

    def __init__(self) -> None:
        self.parts: list[str] = []

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        yield Markdown("".join(self.parts))


class Display:
    """Renders agent events. On a terminal the reply is live-rendered markdown; elsewhere
    (pipes, logs) it is written as plain text as it arrives."""

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
        elif isinstance(event, StepLimit):
            self.console.print(f"[yellow]Stopped after {event.steps} steps (step limit).[/]")

    def _reply_text(self, text: str) -> None:
        self._reply.parts.append(text)
        if not self.console.is_terminal:
            self.console.file.write(text)
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
        tool = message.metadata.get("tool", "system")
        style = "red" if message.failed else "cyan"
        self.console.rule(f"[{style}]{escape(str(tool))}[/]", align="left", style=style)
        self.console.print(message.content, markup=False, highlight=False)
        self.console.rule(style=style)

    def show_message(self, message: Message) -> None:
        """A message from the log (for /log and resumed conversations)."""
        if message.role == "system":
            self.show_result(message)
            return
        label = "[bold green]You[/]" if message.role == "user" else "[bold blue]Assistant[/]"
        self.console.print(label)
        self.console.print(Markdown(message.content) if message.role == "assistant"
                           else message.content, markup=False)
