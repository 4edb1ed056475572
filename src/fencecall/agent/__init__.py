"""The agent: conversations (on disk or in memory) and the loop that drives a model with
tools."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
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
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "..message": ("Outcome",),
        "._context": ("ContextOverflow",),
        "._events": ("AgentEvent", "CallsFound", "EventSink", "ReplyDone", "ReplyText", "Retrying",
                     "StepLimit", "ToolResult"),
        "._near_miss": ("RUN_AS", "NearMiss", "near_misses"),
        "._prompt": ("system_prompt",),
        "._settings": ("AgentSettings",),
        ".conversation": ("Conversation", "ConversationError", "ConversationInfo"),
        ".loop": ("Agent", "RunResult"),
    })

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
