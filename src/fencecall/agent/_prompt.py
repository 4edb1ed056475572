"""The system prompt: who the agent is, where it works, and its tools in the chosen format.

An autonomous run's prompt says that nobody answers the model's replies and how to end the
task (with the complete tool), instead of answering without a tool call.
"""

from __future__ import annotations

from ..execution import Session
from ..parsing import MARKDOWN, FormatLike, get_format
from ..tools.builtin.complete import how_to_finish

BASE = (
    "You are fencecall, an assistant that gets things done by using tools on the user's "
    "machine. Work step by step: use one tool, read its result, then decide the next step. "
    "When the task is done, answer without a tool call."
)
NATIVE = "Call tools with function calling. Use one tool at a time."


COMPACT_BASE = (
    "You are fencecall. You do tasks by using tools. Use one tool, read its result, then "
    "decide the next step. When the task is done, answer without a tool.")

AUTONOMOUS = (
    "You are fencecall, an assistant that gets things done by using tools on the user's "
    "machine, on its own: nobody reads your replies until the task is done. Work step by "
    "step: use one tool, read its result, then decide the next step. A reply without a tool "
    "call does not end the task.")
COMPACT_AUTONOMOUS = (
    "You are fencecall. You do tasks on your own by using tools. Use one tool, read its "
    "result, then decide the next step. A reply without a tool does not end the task.")


def system_prompt(session: Session, fmt: FormatLike = MARKDOWN, *,
                  compact: bool = False, autonomous: bool = False) -> str:
    """The system prompt for calls written in ``fmt`` (a format or its name); ``compact`` is
    the short form for small models and windows; ``autonomous`` the one for a run that only
    the complete tool ends."""
    fmt = get_format(fmt)
    if autonomous:
        intro = (COMPACT_AUTONOMOUS if compact else AUTONOMOUS) + " " + how_to_finish(fmt)
    else:
        intro = COMPACT_BASE if compact else BASE
    parts = [intro, f"The workspace is {session.workspace}."]
    if fmt.native:
        parts.append(NATIVE)
    else:
        parts.append(session.toolchain.instructions(fmt, compact=compact))
    return "\n\n".join(parts)
