"""The streaming map: an agent's events as ACP session updates.

The reply streams as message chunks, its thinking as thought chunks. Each call the loop is
about to run becomes a ``tool_call`` (pending) with a stable id, its kind, a title a person
understands, its raw input and the files it touches; it goes ``in_progress`` when it starts
(for a confirmed call, once the editor allowed it), then ``completed`` or ``failed`` with
its output, and for a file edit the diff of the file before and after. Diagnostics and the
feedback on near misses, which belong to no call, are said as agent messages.
"""

from __future__ import annotations

import itertools
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import acp
from acp.schema import ToolCallLocation, ToolKind

from ..agent import AgentEvent, CallsFound, ReplyDone, ReplyText, Retrying, StepLimit, ToolResult
from ..cli.visible import clipped, one_line, visible
from ..execution import Session, resolve
from ..message import CannotRun, Message
from ..parsing import ToolCall
from ..tools import ToolInvocation
from ..tools.builtin.file_write import read_text, target
from ..tools.hook_points import ToolPreExecute
from ._text import Kind, ThinkingSplitter, fenced

Update = Any
"""One of the SDK's session update models (``acp.schema.SessionUpdate``'s members)."""
Send = Callable[[Update], None]

KINDS: dict[str, ToolKind] = {"shell": "execute", "ipython": "execute", "python": "execute",
                              "save": "edit", "append": "edit", "patch": "edit",
                              "read": "read"}
"""The ACP kind of each built-in tool; any other (jobs, MCP tools…) is ``other``."""
_VERBS = {"save": "Write", "append": "Append to", "patch": "Patch", "read": "Read"}
COMMAND_WIDTH = 120
"""Characters of a command's first line its title shows."""
TITLE_WIDTH = 200
"""Characters of any other title (a file tool's paths, a tool and its arguments)."""
MAX_SHOWN = 200_000
"""Characters of a file an edit's diff shows, before and after (a larger file: no diff)."""


@dataclass(slots=True)
class _Call:
    """One call the editor has been told of, until its last result."""

    id: str
    tool: str
    invocation: ToolInvocation | None = None
    before: str | None = None
    output: list[str] = field(default_factory=list)


def title_of(tool: str, call: ToolCall) -> str:
    """What the call does, in a line: the command, the file, else the tool and its line. A
    title that could not hold all of it says so: "…" where it was cut, "(+N lines)" where
    more lines of a command follow (the whole call is the raw input)."""
    if KINDS.get(tool) == "execute":
        command = one_line(call.content, COMMAND_WIDTH)
        return f"Run {command}" if command else f"Run {tool}"
    path = call.kwargs.get("path") if call.kwargs else None
    where = str(path) if path else (call.argline or call.content.strip().replace("\n", ", "))
    if tool in _VERBS:
        return f"{_VERBS[tool]} {clipped(where, TITLE_WIDTH)}"
    return clipped(" ".join(filter(None, (tool, call.argline or str(dict(call.kwargs) or "")))),
                   TITLE_WIDTH)


def raw_input_of(call: ToolCall) -> dict[str, Any]:
    """The call as written: its arguments, or its langtag line and body."""
    if call.kwargs:
        return dict(call.kwargs)
    return {"argline": call.argline, "content": call.content}


def locations_of(tool: str, call: ToolCall, workspace: Path) -> list[ToolCallLocation]:
    """The files a file tool names (the read tool may name several, one a line)."""
    if tool not in _VERBS:
        return []
    path = call.kwargs.get("path") if call.kwargs else None
    names = [str(path)] if path else (
        call.argline.split() if call.argline else call.content.split("\n"))
    if tool in ("save", "append", "patch"):
        names = names[:1]
    return [ToolCallLocation(path=str(workspace / name.split(":")[0].strip()))
            for name in names if name.strip()]


class Reporter:
    """Sends one session's agent events to the editor (``send`` delivers an update)."""

    def __init__(self, send: Send, session: Session):
        self._send = send
        self._session = session
        self._ids = itertools.count(1)
        self._calls: deque[_Call] = deque()
        self._splitter = ThinkingSplitter()

    def __call__(self, event: AgentEvent) -> None:
        if isinstance(event, ReplyText):
            self._chunks(self._splitter.feed(event.text))
        elif isinstance(event, ReplyDone):
            self._chunks(self._splitter.flush())
        elif isinstance(event, CallsFound):
            for call in event.calls:
                self._announce(call)
        elif isinstance(event, ToolResult):
            self._result(event.message)
        elif isinstance(event, Retrying):
            self.say(f"\n\nThe reply stream broke ({event.reason}); retrying in "
                     f"{event.delay:g} s (attempt {event.attempt} of {event.attempts}).\n\n")
        elif isinstance(event, StepLimit):
            self.say(f"\n\nStopped after {event.steps} steps (the step limit).\n")

    def say(self, text: str) -> None:
        """An agent message of fencecall's own."""
        self._send(acp.update_agent_message_text(text))

    @property
    def current(self) -> str | None:
        """The id of the call that runs (or is asked about) now."""
        return self._calls[0].id if self._calls else None

    def started(self, data: ToolPreExecute) -> None:
        """A pre-execute hook: the call is about to run (or be asked about). A file edit's
        file is read now, for the diff. A call that needs no yes is in progress now; one
        that does, once it is allowed (:meth:`running`)."""
        if not self._calls:
            return
        call = self._calls[0]
        invocation = data.invocation
        call.invocation = invocation
        if KINDS.get(call.tool) == "edit":
            call.before = _file_text(invocation)
        if not _asks(invocation):
            self.running()

    def running(self) -> None:
        if self._calls:
            self._send(acp.update_tool_call(self._calls[0].id, status="in_progress"))

    def finish(self) -> None:
        """The turn ended: a call told of but never answered did not run."""
        while self._calls:
            call = self._calls.popleft()
            self._send(acp.update_tool_call(call.id, status="failed", content=_text(
                "\n\n".join(call.output) or "Not run.")))

    def _chunks(self, pieces: list[tuple[Kind, str]]) -> None:
        for kind, text in pieces:
            self._send(acp.update_agent_thought_text(text) if kind == "thought"
                       else acp.update_agent_message_text(text))

    def _announce(self, call: ToolCall) -> None:
        use = resolve(call, self._session.toolchain)
        if use is None:  # not a call of the session's tools: the pipeline skips it too
            return
        found = _Call(call.call_id or f"call-{next(self._ids)}", use.tool)
        self._calls.append(found)
        self._send(acp.start_tool_call(
            found.id, visible(title_of(use.tool, call)), kind=KINDS.get(use.tool, "other"),
            status="pending", raw_input=raw_input_of(call),
            locations=locations_of(use.tool, call, self._session.workspace)))

    def _result(self, message: Message) -> None:
        if not self._calls or (isinstance(message.note, CannotRun)
                                and message.note.malformed is not None):
            self.say(f"\n\n{fenced(message.content)}\n\n")
            return
        call = self._calls[0]
        call.output.append(message.content)
        if message.call is None:  # more of the call's results follow
            return
        self._calls.popleft()
        content = _text("\n\n".join(call.output))
        failed = not message.call.ok
        if not failed and call.invocation is not None and KINDS.get(call.tool) == "edit":
            after = _file_text(call.invocation)
            if after is not None:
                content.append(acp.tool_diff_content(
                    str(self._session.workspace / str(call.invocation.kwargs["path"])),
                    after, call.before))
        self._send(acp.update_tool_call(call.id, status="failed" if failed else "completed",
                                        content=content,
                                        raw_output={"outcome": message.call.outcome}))


def _asks(invocation: ToolInvocation) -> bool:
    """Whether the pipeline will ask before running the call (its tool's rule)."""
    rule = invocation.spec.confirm
    return bool(rule(invocation)) if callable(rule) else bool(rule)


def _text(text: str) -> list[Any]:
    return [acp.tool_content(acp.text_block(text))]


def _file_text(invocation: ToolInvocation) -> str | None:
    """The file a file tool names, read as the tool reads it (inside the roots, by
    descriptor, or from the editor); None where it is missing, unreadable, binary or too
    long to show."""
    try:
        with target(invocation) as place:
            text = read_text(invocation, place)
    except (ValueError, OSError, KeyError):
        return None
    return text if text is None or len(text) <= MAX_SHOWN else None
