"""The agent: conversations (on disk or in memory) and the loop that drives a model with
tools."""

from ..message import Outcome
from .context import ContextOverflow
from .conversation import Conversation, ConversationError, ConversationInfo
from .events import (
    AgentEvent,
    CallsFound,
    EventSink,
    ReplyDone,
    ReplyText,
    Retrying,
    StepLimit,
    ToolResult,
)
from .loop import Agent, RunResult
from .near_miss import RUN_AS, NearMiss, near_misses
from .prompt import system_prompt
from .settings import AgentSettings

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
