"""The hook points of a session and the data each one hands its hooks."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from ..message import Message, Outcome
from ._hooks import HookPoint
from .spec import ToolInvocation
from .tool_context import ToolContext


@dataclass(frozen=True, slots=True)
class ToolPreExecute:
    """A call about to run; ``history`` is the conversation so far (a read-only snapshot:
    a guard may judge the call by what led to it)."""

    invocation: ToolInvocation
    history: tuple[Message, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolPostExecute:
    invocation: ToolInvocation
    results: tuple[Message, ...]
    duration: float
    error: BaseException | None = None


@dataclass(frozen=True, slots=True)
class MessagePreProcess:
    context: ToolContext
    message: Message


@dataclass(frozen=True, slots=True)
class MessagePostProcess:
    context: ToolContext
    message: Message
    results: tuple[Message, ...]


@dataclass(frozen=True, slots=True)
class SessionEvent:
    context: ToolContext


@dataclass(frozen=True, slots=True)
class UserPrompt:
    """A user's prompt about to go to the model; a Block keeps it from the model (and the
    conversation), messages go with it. ``session_id``: the conversation's name (None: one
    kept in memory)."""

    context: ToolContext
    prompt: str
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class RunStop:
    """A run about to end as ``outcome`` (``reason`` says why). A Block makes a run that
    ended done go on, its reason the next prompt; ``continued`` is how many times this run
    already went on so (the agent allows a few, then it ends)."""

    context: ToolContext
    outcome: Outcome
    reason: str
    continued: int = 0
    session_id: str | None = None


@dataclass(frozen=True, slots=True)
class FileSave:
    """A file a tool is about to write (pre) or has written (post)."""

    context: ToolContext
    path: Path
    content: str
    previous: str | None


TOOL_PRE_EXECUTE: HookPoint[ToolPreExecute] = HookPoint("tool.pre_execute", can_block=True)
TOOL_POST_EXECUTE: HookPoint[ToolPostExecute] = HookPoint("tool.post_execute")
MESSAGE_PRE_PROCESS: HookPoint[MessagePreProcess] = HookPoint("message.pre_process",
                                                              can_block=True)
MESSAGE_POST_PROCESS: HookPoint[MessagePostProcess] = HookPoint("message.post_process")
SESSION_START: HookPoint[SessionEvent] = HookPoint("session.start")
SESSION_END: HookPoint[SessionEvent] = HookPoint("session.end")
PROMPT_SUBMIT: HookPoint[UserPrompt] = HookPoint("agent.prompt", can_block=True)
RUN_STOP: HookPoint[RunStop] = HookPoint("agent.stop", can_block=True)
FILE_PRE_SAVE: HookPoint[FileSave] = HookPoint("file.pre_save", can_block=True)
FILE_POST_SAVE: HookPoint[FileSave] = HookPoint("file.post_save")
