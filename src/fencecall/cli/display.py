"""Showing an agent at work in the terminal: streamed replies and tool results.

Everything here comes from a model or a tool, so all of it goes through
:func:`~fencecall.cli.visible.visible` first: escape sequences, carriage returns, bidi
overrides and zero-width characters are shown, not interpreted, and nothing is read as rich
markup or ``:emoji:`` codes.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from rich.console import Console, ConsoleOptions, RenderResult
from rich.live import Live
from rich.markdown import Markdown
from rich.segment import Segment
from rich.spinner import Spinner
from rich.text import Text

from ..agent import AgentEvent, ReplyDone, ReplyText, Retrying, StepLimit, ToolResult
from ..message import Message, Usage
from ..tools import ConfirmRequest, HookRegistry
from ..tools.hook_points import TOOL_PRE_EXECUTE, ToolPreExecute
from ..tools.tool_context import Answer, ConfirmFunc
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


_FENCE = re.compile(r" {0,3}(`{3,}|~{3,})")


def settled(text: str) -> int:
    """Where the complete blocks of ``text`` end: after its last blank line outside a code
    fence (0: none yet). What comes before can be printed for good; what follows may still
    change as the reply streams."""
    end = position = 0
    fence = ""
    for line in text.splitlines(keepends=True):
        if not line.endswith("\n"):
            break
        position += len(line)
        opening = _FENCE.match(line)
        if fence:
            if opening and opening.group(1).startswith(fence) and not line.strip(" `~\n"):
                fence = ""
        elif opening:
            fence = opening.group(1)
        elif not line.strip():
            end = position
    return end


@dataclass(slots=True)
class _Working:
    """What the status line says is going on, since when."""

    what: str
    tokens: int
    since: float = field(default_factory=time.monotonic)


class _Region:
    """What the live region shows: the unfinished end of the reply, else the status line.
    Never taller than the screen less two lines, so nothing of it scrolls into the scrollback
    (where every repaint would leave a copy)."""

    def __init__(self) -> None:
        self.tail = ""
        self.working: _Working | None = None
        self._spinner = Spinner("dots", style="cyan")

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if self.tail:
            room = max(console.size.height - 2, 1)
            lines = console.render_lines(HonestMarkdown(self.tail), options.update(height=None),
                                         pad=False)
            for line in lines[-room:]:
                yield from line
                yield Segment.line()
        elif self.working is not None:
            work = self.working
            spent = f"{work.what}… {time.monotonic() - work.since:.0f} s"
            if work.tokens:
                spent += f" · {work.tokens:,} tokens so far"
            self._spinner.update(text=Text(spent, "dim"))
            yield self._spinner


class Display:
    """Renders agent events. On a terminal the reply is rendered as markdown as it streams:
    its complete blocks are printed for good, only its unfinished end is repainted in a live
    region; elsewhere (pipes, logs) it is written as plain text as it arrives, made visible
    character by character (so a chunk boundary cannot split what it replaces).

    In the chat (:attr:`lively`) a status line shows the model thinking or a call running,
    and a dim line after each reply its tokens and cost (``price``: that of a reply's
    tokens, None where unknown)."""

    def __init__(self, console: Console):
        self.console = console
        self.lively = False
        self.price: Callable[[Usage], Decimal | None] = lambda usage: None
        self._live: Live | None = None
        self._region = _Region()
        self._parts: list[str] = []
        self._printed = False
        """Whether a block of the reply was printed (the next one is set apart)."""
        self._tokens = 0
        """The tokens of this turn's replies so far."""

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ReplyText):
            self._reply_text(event.text)
        elif isinstance(event, ReplyDone):
            self._reply_done(event.message)
        elif isinstance(event, ToolResult):
            self.show_result(event.message)
            self.working("Thinking")  # the model reads the result next
        elif isinstance(event, Retrying):
            self._reply_done(None)  # what was shown of the broken reply stays; a new one follows
            self.console.print(visible_text(
                f"The reply stream broke ({event.reason}); retrying in {event.delay:g} s "
                f"(attempt {event.attempt} of {event.attempts}).", "yellow"))
            self.working("Waiting to retry")
        elif isinstance(event, StepLimit):
            self.console.print(f"[yellow]Stopped after {event.steps} steps (step limit).[/]")

    def turn(self) -> None:
        """A prompt was sent: the model thinks until its reply streams."""
        self._tokens = 0
        self.working("Thinking")

    def working(self, what: str) -> None:
        """Show the status line (in the chat, on a terminal) until output comes."""
        if self.lively and self.console.is_terminal:
            self._region.working = _Working(what, self._tokens)
            self._show()

    def idle(self) -> None:
        """Nothing goes on any more (a turn ended, a question is about to be asked)."""
        self._region.working = None
        if self._live is not None and not self._region.tail:
            self._live.stop()
            self._live = None

    def watch(self, hooks: HookRegistry) -> None:
        """Show the status line while each tool call runs."""
        def running(data: ToolPreExecute) -> None:
            self.working(f"Running {visible(data.invocation.spec.name)}")

        hooks.add(TOOL_PRE_EXECUTE, running, priority=-1000, name="status-line")

    def asking(self, confirm: ConfirmFunc) -> ConfirmFunc:
        """``confirm`` with the status line put away while it asks (and back after)."""
        def ask(request: ConfirmRequest) -> Answer:
            working = self._region.working
            self.idle()
            try:
                return confirm(request)
            finally:
                if working is not None:
                    self.working(working.what)

        return ask

    def _show(self) -> None:
        if self._live is None:
            self._live = Live(self._region, console=self.console, refresh_per_second=10,
                              transient=True)
            self._live.start()
        else:
            self._live.refresh()

    def _reply_text(self, text: str) -> None:
        self._parts.append(text)
        if not self.console.is_terminal:
            self.console.file.write(visible(text))
            self.console.file.flush()
            return
        self._region.working = None
        tail = self._region.tail + text
        done = settled(tail)
        self._region.tail = tail[done:]
        self._show()
        self._print(tail[:done])

    def _print(self, blocks: str) -> None:
        """Print complete blocks of the reply for good (above the live region)."""
        if blocks.strip():
            if self._printed:
                self.console.print()  # the blank line markdown puts between blocks
            self.console.print(HonestMarkdown(blocks))
            self._printed = True

    def _reply_done(self, message: Message | None) -> None:
        tail, self._region.tail = self._region.tail, ""
        self.idle()
        reply = "".join(self._parts)
        if self.console.is_terminal:
            self._print(tail)
        elif reply and not reply.endswith("\n"):
            self.console.file.write("\n")
        if message is not None and message.content.startswith(reply):
            cut = message.content[len(reply):].strip()  # "[interrupted by the user]"
            if cut:
                self.console.print(visible_text(cut, "yellow"))
        self._parts, self._printed = [], False
        if message is not None and message.reply is not None:
            self._spent(message.reply.usage)

    def _spent(self, usage: Usage | None) -> None:
        """The dim line of a reply's tokens and cost (in the chat)."""
        if usage is None:
            return
        self._tokens += usage.all_input + usage.output_tokens
        if not self.lively:
            return
        line = f"{usage.all_input:,} in · {usage.output_tokens:,} out tokens"
        cost = self.price(usage)
        if cost is not None:
            line += f" · ${cost:.4f}"
        self.console.print(Text(line, "dim"))

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
