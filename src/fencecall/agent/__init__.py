"""The agent: conversations on disk and the loop that drives a model with tools."""

from .conversation import Conversation, ConversationError, ConversationInfo
from .loop import (
    Agent,
    AgentEvent,
    Outcome,
    ReplyDone,
    ReplyText,
    Retrying,
    StepLimit,
    ToolResult,
)
from .prompt import system_prompt

__all__ = [
    "Agent",
    "AgentEvent",
    "Conversation",
    "ConversationError",
    "ConversationInfo",
    "Outcome",
    "ReplyDone",
    "ReplyText",
    "Retrying",
    "StepLimit",
    "ToolResult",
    "system_prompt",
]
