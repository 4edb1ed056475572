"""A conversation's messages as the turns an export shows: a user's prompt, a model's reply
with the calls it made and their results, or a note of the loop's (a reminder, near-miss
feedback, a limit, a compaction).

A reply's native calls are in its record; its text calls are not stored apart, so they are
found again (:mod:`._calls`) and paired with the results that follow the reply, which carry
the tool that ran and, for named calls, the call's id.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..message import Message
from ._calls import TextCalls

Kind = Literal["user", "agent", "system"]


@dataclass(slots=True)
class Action:
    """One call of a reply and the results it got (usually one; none where the run
    stopped first)."""

    call_id: str
    tool: str
    arguments: Mapping[str, Any]
    results: list[Message] = field(default_factory=list)


@dataclass(slots=True)
class Turn:
    """One step of the conversation, as ATIF counts steps."""

    kind: Kind
    message: Message
    actions: list[Action] = field(default_factory=list)
    notes: list[Message] = field(default_factory=list)
    """System messages that answered the reply without being a call's result (feedback on
    calls that could not run, a reminder): kept with it as results of no call."""


def turns(messages: Sequence[Message], fmt: str) -> list[Turn]:
    """The turns of ``messages``; ``fmt`` is the call format the conversation ran with."""
    found: list[Turn] = []
    calls: TextCalls | None = None
    for message in messages:
        if message.role == "assistant":
            found.append(Turn("agent", message, _native(message)))
            calls = TextCalls(message.content, fmt, len(found))
        elif message.role == "user" or not found or found[-1].kind != "agent" or (
                message.ending is not None or message.reply is not None):
            found.append(Turn("user" if message.role == "user" else "system", message))
            calls = None
        elif message.tool is not None or message.call is not None:
            assert calls is not None
            _answer(found[-1], message, calls)
        else:
            found[-1].notes.append(message)
    return found


def _native(message: Message) -> list[Action]:
    return [Action(call.id, call.name, dict(call.arguments)) for call in message.native_calls]


def _answer(turn: Turn, result: Message, calls: TextCalls) -> None:
    """Put ``result`` with the call it answers: a native or named call by its id, else the
    reply's next text call of its tool, else the call before it (a call may get more than
    one message)."""
    tool = result.tool or (result.call.tool if result.call else "")
    for action in turn.actions:
        if result.call_id is not None and action.call_id == result.call_id:
            action.results.append(result)
            return
    found = calls.next(tool, result.call_id)
    if found is None and turn.actions and turn.actions[-1].tool == tool:
        turn.actions[-1].results.append(result)
        return
    call_id, arguments = found or (result.call_id or calls.new_id(), {})
    turn.actions.append(Action(call_id, tool, arguments, [result]))
