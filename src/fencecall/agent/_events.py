"""What an agent tells its frontend as it works: the reply as it streams, the calls found,
each result, a retry, the step limit. A frontend passes an :data:`EventSink` to the agent."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from ..message import Message
from ..parsing import ToolCall


@dataclass(frozen=True, slots=True)
class ReplyText:
    """A piece of the model's reply as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ReplyDone:
    """The model's reply is complete (``stopped_early`` when cut at a call)."""

    message: Message
    stopped_early: bool


@dataclass(frozen=True, slots=True)
class CallsFound:
    """The calls of a reply, about to run in order; each one's results follow as
    :class:`ToolResult` events, its last result carrying its record (``message.call``)."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class ToolResult:
    message: Message


@dataclass(frozen=True, slots=True)
class Retrying:
    """The reply stream broke; the reply is asked for again after ``delay`` seconds."""

    reason: str
    attempt: int
    attempts: int
    delay: float


@dataclass(frozen=True, slots=True)
class StepLimit:
    steps: int


AgentEvent = ReplyText | ReplyDone | CallsFound | ToolResult | Retrying | StepLimit
EventSink = Callable[[AgentEvent], None]
