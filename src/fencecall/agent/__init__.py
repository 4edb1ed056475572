"""The agent: conversations (on disk or in memory) and the loop that drives a model with
tools."""

from ..message import Outcome
from ._context import ContextOverflow
from ._events import (
    AgentEvent,
    CallsFound,
    EventSink,
    ReplyDone,
    ReplyText,
    Retrying,
    StepLimit,
    ToolResult,
)
from ._near_miss import RUN_AS, NearMiss, near_misses
from ._prompt import system_prompt
from ._settings import AgentSettings
from .conversation import Conversation, ConversationError, ConversationInfo
from .loop import Agent, RunResult

__all__ = [
    "RUN_AS",
    "Agent",
    "AgentEvent",
    "AgentSettings",
    "CallsFound",
    "ContextOverflow",
    "Conversation",
    "ConversationError",
    "ConversationInfo",
    "EventSink",
    "NearMiss",
    "Outcome",
    "ReplyDone",
    "ReplyText",
    "Retrying",
    "RunResult",
    "StepLimit",
    "ToolResult",
    "near_misses",
    "system_prompt",
]
