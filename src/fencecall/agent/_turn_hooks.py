"""What the agent says around the hooks of a turn: a prompt a hook kept from the model, why
a run stops (for the stop hooks), and the end of the stop hooks' patience.

A stop hook may make a run that ended done go on, its reason the next prompt (a user's
"the tests still fail"). A hook that always says so would keep the run going for ever, so a
send goes on at most :data:`STOP_CONTINUES` times; the hooks are told once it has gone on
(``continued``), as Claude Code's ``stop_hook_active``. A run that hit a limit, or that the
user interrupted, ends whatever the hooks say.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..message import Message, Outcome, Status, system

STOP_CONTINUES = 5
"""Times one send may go on at the stop hooks' word."""


def not_sent(reason: str) -> Message:
    """What the user is shown of a prompt a hook blocked (the model never sees it)."""
    return system(f"The prompt was not sent: a prompt hook blocked it: {reason}",
                  Status.BLOCKED)


def stop_reason(messages: Sequence[Message], outcome: Outcome) -> str:
    """Why the run is about to end as ``outcome``, as the stop hooks are told."""
    last = messages[-1] if messages else None
    if last is not None and last.ending is not None:
        return last.content
    if last is not None and last.completes:
        return "the model called complete"
    return "the model answered without a tool call" if outcome is Outcome.DONE \
        else f"the run ended: {outcome.value}"


def patience_ends() -> Message:
    """Recorded where the stop hooks would still go on after :data:`STOP_CONTINUES` times."""
    return system(f"The stop hooks asked to go on {STOP_CONTINUES} times in a row; the run "
                  "ends here.")
