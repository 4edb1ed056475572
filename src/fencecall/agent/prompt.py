"""The system prompt: who the agent is, where it works, and its tools in the chosen format."""

from __future__ import annotations

from ..execution import Session

BASE = (
    "You are fencecall, an assistant that gets things done by using tools on the user's "
    "machine. Work step by step: use one tool, read its result, then decide the next step. "
    "When the task is done, answer without a tool call."
)
NATIVE = "Call tools with function calling. Use one tool at a time."


COMPACT_BASE = (
    "You are fencecall. You do tasks by using tools. Use one tool, read its result, then "
    "decide the next step. When the task is done, answer without a tool.")


def system_prompt(session: Session, *, compact: bool = False) -> str:
    """The system prompt; ``compact`` is the short form for small models and windows."""
    parts = [COMPACT_BASE if compact else BASE, f"The workspace is {session.workspace}."]
    if session.format.native:
        parts.append(NATIVE)
    else:
        parts.append(session.toolchain.instructions(session.format, compact=compact))
    return "\n\n".join(parts)
