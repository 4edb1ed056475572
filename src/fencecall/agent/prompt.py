"""The system prompt: who the agent is, where it works, and its tools in the chosen format."""

from __future__ import annotations

from ..execution import Session
from ..parsing import MARKDOWN, FormatLike, get_format

BASE = (
    "You are fencecall, an assistant that gets things done by using tools on the user's "
    "machine. Work step by step: use one tool, read its result, then decide the next step. "
    "When the task is done, answer without a tool call."
)
NATIVE = "Call tools with function calling. Use one tool at a time."


COMPACT_BASE = (
    "You are fencecall. You do tasks by using tools. Use one tool, read its result, then "
    "decide the next step. When the task is done, answer without a tool.")


def system_prompt(session: Session, fmt: FormatLike = MARKDOWN, *,
                  compact: bool = False) -> str:
    """The system prompt for calls written in ``fmt`` (a format or its name); ``compact`` is
    the short form for small models and windows."""
    fmt = get_format(fmt)
    parts = [COMPACT_BASE if compact else BASE, f"The workspace is {session.workspace}."]
    if fmt.native:
        parts.append(NATIVE)
    else:
        parts.append(session.toolchain.instructions(fmt, compact=compact))
    return "\n\n".join(parts)
