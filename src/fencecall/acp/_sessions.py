"""One ACP session: a fencecall conversation, its agent, and the turn that runs now.

The session's agent is built once (see :mod:`._server`); its events go to a
:class:`~._updates.Reporter`, its confirmations to :class:`~._permissions.Permissions`, both
talking to the editor through a :class:`Link` from the turn's thread. A cancel answers the
pending permission request as cancelled (a rejection) and interrupts the turn
(:mod:`._turns`); the prompt then ends with stop reason ``cancelled``.
"""

from __future__ import annotations

import asyncio
import contextlib
import io
import threading
from collections.abc import Callable, Coroutine, Sequence
from concurrent.futures import CancelledError, Future
from typing import Any, Literal

import acp
from acp.helpers import update_available_commands
from acp.schema import (
    AvailableCommand,
    AvailableCommandInput,
    PermissionOption,
    ToolCallUpdate,
    UnstructuredCommandInput,
)
from rich.console import Console

from ..agent import Agent, EventSink, Outcome
from ..cli.display import Display
from ..cli.slash import COMMANDS, ExitChat, run_slash
from ..message import Message
from ..tools import ConfirmFunc, ConfirmRequest
from ..tools.hook_points import TOOL_PRE_EXECUTE
from ._permissions import Permissions
from ._text import fenced
from ._turns import Turn
from ._updates import KINDS, Reporter, Update

WAIT_SLICE = 0.1
StopReason = Literal["end_turn", "max_tokens", "max_turn_requests", "refusal", "cancelled"]
Build = Callable[[ConfirmFunc, EventSink], Agent]
"""Makes the session's agent with the given confirmation and event sink."""
_NOT_HERE = ("exit", "quit")
"""Chat commands that mean nothing in an editor (it closes its sessions itself)."""


class Link:
    """The connection to the editor, for the turns' threads: each call runs on the
    connection's event loop and is waited for."""

    def __init__(self, conn: Any, loop: asyncio.AbstractEventLoop):
        self.conn = conn
        self.loop = loop

    def submit(self, coroutine: Coroutine[Any, Any, Any]) -> Future[Any]:
        return asyncio.run_coroutine_threadsafe(coroutine, self.loop)

    def call(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """``coroutine``'s result, waited for in short slices: a cancel (an interrupt raised
        in this thread) lands between two, not when the editor answers; the request is then
        cancelled too."""
        future = self.submit(coroutine)
        try:
            while True:
                try:
                    return future.result(timeout=WAIT_SLICE)
                except TimeoutError:
                    continue
        except BaseException:
            future.cancel()
            raise

    def update(self, session_id: str, update: Update) -> None:
        self.call(self.conn.session_update(session_id, update))


class AcpSession:
    """A conversation the editor drives, one turn at a time; with ``yes`` every call runs
    without asking (``-y``)."""

    def __init__(self, link: Link, build: Build, *, yes: bool = False):
        self._link = link
        self._lock = threading.Lock()
        self._turn: Turn[StopReason] | None = None
        self._asking: Future[Any] | None = None
        self._cancelled = False
        self.agent = build(self._confirm, self._event)
        self.id = self.agent.conversation.name
        self.reporter = Reporter(self._send, self.agent.session)
        self.permissions = Permissions(self._ask, self.reporter, yes=yes)
        self.agent.session.hooks.add(TOOL_PRE_EXECUTE, self.reporter.started, priority=-1000,
                                     name="acp-tool-started")

    def commands(self) -> list[AvailableCommand]:
        """The chat's slash commands and the tools' own, as the editor offers them."""
        found = [AvailableCommand(name=name, description=command.help)
                 for name, command in COMMANDS.items() if name not in _NOT_HERE]
        found += [AvailableCommand(name=command.name, description=command.help or spec.name,
                                   input=AvailableCommandInput(root=UnstructuredCommandInput(
                                       hint="arguments")))
                  for spec in self.agent.session.toolchain.tools for command in spec.commands]
        return found

    def commands_update(self) -> Update:
        return update_available_commands(self.commands())

    def start(self, text: str) -> Future[StopReason]:
        """Run a prompt (a slash command if it starts with ``/``) in a turn of its own;
        :class:`RuntimeError` while another turn runs."""
        with self._lock:
            if self._turn is not None and not self._turn.result.done():
                raise RuntimeError("a prompt is already running in this session")
            self._cancelled = False
            work = (lambda: self._slash(text)) if text.startswith("/") else (
                lambda: self._send_prompt(text))
            self._turn = Turn(work, "cancelled")
            return self._turn.result

    def cancel(self) -> None:
        """Stop the running turn: its pending permission request is answered as
        cancelled, then the turn is interrupted as by Ctrl-C."""
        with self._lock:
            self._cancelled = True
            if self._asking is not None:
                self._asking.cancel()
            if self._turn is not None:
                self._turn.interrupt()

    def close(self) -> None:
        """End the session: its tools' processes and jobs stop, the log is closed."""
        self.cancel()
        if self._turn is not None:
            with contextlib.suppress(Exception):  # closed however the turn ended
                self._turn.result.result(timeout=5)
        self.agent.session.close()
        self.agent.conversation.close()

    def _send_prompt(self, text: str) -> StopReason:
        try:
            outcome = self.agent.send(text)
        finally:
            self.reporter.finish()
        if self._cancelled or outcome is Outcome.INTERRUPTED:
            return "cancelled"
        return "max_turn_requests" if outcome is Outcome.STEP_LIMIT else "end_turn"

    def _slash(self, line: str) -> StopReason:
        """A chat command, its output said as an agent message."""
        name = line[1:].partition(" ")[0]
        output = io.StringIO()
        console = Console(file=output, width=100, color_system=None, force_terminal=False,
                          highlight=False)
        try:
            if name in _NOT_HERE:
                raise ExitChat
            run_slash(line, self.agent, Display(console))
        except ExitChat:
            console.print(f"/{name} does nothing here: the editor ends its sessions.")
        shown = output.getvalue()
        self.reporter.say(fenced(shown) if shown.strip() else "(no output)")
        return "cancelled" if self._cancelled else "end_turn"

    def _send(self, update: Update) -> None:
        self._link.update(self.id, update)

    def _event(self, event: Any) -> None:
        self.reporter(event)

    def _confirm(self, request: ConfirmRequest) -> bool:
        return self.permissions(request)

    def _ask(self, tool_call: ToolCallUpdate, options: Sequence[PermissionOption]) -> str | None:
        """Ask the editor; None when cancelled, or when the request failed (the editor went
        away): both count as a rejection."""
        with self._lock:
            if self._cancelled:
                return None
            self._asking = self._link.submit(self._link.conn.request_permission(
                self.id, tool_call, list(options)))
            asking = self._asking
        try:
            answer = asking.result()
        except (CancelledError, Exception):
            return None
        finally:
            with self._lock:
                self._asking = None
        outcome = answer.outcome
        return outcome.option_id if outcome.outcome == "selected" else None


def replay(messages: Sequence[Message]) -> list[Update]:
    """A conversation's history as updates: the user's prompts, the model's replies, each
    tool call and its result, and fencecall's own notes."""
    updates: list[Update] = []
    for index, message in enumerate(messages):
        if message.role == "user":
            updates.append(acp.update_user_message_text(message.content))
        elif message.role == "assistant":
            updates.append(acp.update_agent_message_text(message.content))
        elif message.tool is not None:
            call_id = message.call_id or f"history-{index}"
            updates.append(acp.start_tool_call(call_id, message.tool,
                                               kind=KINDS.get(message.tool, "other"),
                                               status="pending"))
            updates.append(acp.update_tool_call(
                call_id, status="failed" if message.failed else "completed",
                content=[acp.tool_content(acp.text_block(message.content))]))
        else:
            updates.append(acp.update_agent_message_text(f"\n\n{fenced(message.content)}\n\n"))
    return updates

