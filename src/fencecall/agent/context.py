"""Keeping a long session inside the model's context window, and its prompt cache warm.

One budget and one trigger: a request may hold ``window - reply - headroom`` tokens. Below
that, history is append-only, so each request's messages are a prefix of the next request's
and provider prefix caches keep hitting. When the next request would not fit, the older
exchanges are replaced once (a *compaction*): by a summary the model writes, or, where none
can be had, by a note that they were left out. The compaction is a system message appended to
the log (metadata ``compaction``) saying how many messages before it stay verbatim; a request
is built from the log as the messages up to the task, the compaction's text, the kept messages
and what came after (:func:`view`). So the prefix stays fixed until the next compaction, and
since each leaves at most :data:`KEEP_SHARE` of the budget, compactions grow with the size of
the history, not with the number of requests. The log keeps every original message.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..config import Compaction
from ..errors import UserError
from ..message import Message

MARKER = "compaction"
"""The metadata key of a compaction's message: ``{"kept": N, "replaced": M, "mode": …}``."""

KEEP_SHARE = 3
"""A compaction keeps at most 1/KEEP_SHARE of the budget verbatim (the latest exchanges)."""
SUMMARY_SHARE = 8
"""A summary may take at most 1/SUMMARY_SHARE of the window."""
HEADROOM_SHARE = 50
"""Tokens kept free beyond the reply: 1/HEADROOM_SHARE of the window (at least
:data:`MIN_HEADROOM`), for counts that are off by a little."""
MIN_HEADROOM = 64

SUMMARY_REQUEST = (
    "The conversation is about to outgrow the context window, so the messages above (after the "
    "task) will be replaced by your summary of them. Write that summary now, without calling "
    "any tool. Keep intact: the task and every instruction the user gave, word for word where "
    "they are rules; the files created or changed and why; what was found (facts, errors, "
    "decisions); what is done and what is left to do; any call that had not finished. Be "
    "complete but brief: plain text, no tool calls.")


class ContextOverflow(UserError):
    """The prompt, the task and the latest exchange cannot fit the context window."""


@dataclass(frozen=True, slots=True)
class Window:
    """A model's context window and the share of it a request may hold."""

    size: int
    reply_tokens: int
    compaction: Compaction = "summary"

    @property
    def budget(self) -> int:
        """What a request's input may hold: the window less the reply and some headroom."""
        return self.size - self.reply_tokens - max(self.size // HEADROOM_SHARE, MIN_HEADROOM)

    @property
    def summary_tokens(self) -> int:
        return max(min(self.reply_tokens, self.size // SUMMARY_SHARE), 1)


def is_compaction(message: Message) -> bool:
    return message.role == "system" and isinstance(message.metadata.get(MARKER), dict)


def head_length(messages: Sequence[Message]) -> int:
    """How many messages lead up to and include the task (the first user message): they
    are never compacted."""
    return next((i + 1 for i, m in enumerate(messages) if m.role == "user"), 0)


def view(messages: Sequence[Message]) -> tuple[Message, ...]:
    """The messages a request holds: after the latest compaction, the task, the compaction,
    the messages it kept, and those after it."""
    last = next((i for i in range(len(messages) - 1, -1, -1) if is_compaction(messages[i])),
                None)
    if last is None:
        return tuple(messages)
    head = head_length(messages)
    marker = messages[last]
    kept_count = _count(marker.metadata[MARKER], "kept")
    before = [m for m in messages[head:last] if not is_compaction(m)]
    kept = before[max(len(before) - kept_count, 0):] if kept_count else []
    after = [m for m in messages[last + 1 :] if not is_compaction(m)]
    return (*messages[:head], marker, *kept, *after)


def _count(record: dict[str, Any], key: str) -> int:
    value = record.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def exchanges(messages: Sequence[Message], start: int) -> list[int]:
    """Where each exchange from ``start`` on begins: a user message, or a reply with the
    results it got (a reply and its results are kept or replaced together)."""
    return [i for i in range(start, len(messages))
            if i == start or messages[i].role in ("user", "assistant")]


def boundary(messages: Sequence[Message], costs: Sequence[int], keep: int) -> int | None:
    """Where a compaction of ``messages`` (a request's, with their token ``costs``) ends:
    the start of the earliest exchange from which the rest costs at most ``keep`` tokens,
    but never the latest exchange. None where nothing before it can be replaced."""
    head = head_length(messages)
    starts = exchanges(messages, head)
    if len(starts) < 2:
        return None
    tail = 0
    chosen = starts[-1]
    for index in range(len(starts) - 1, 0, -1):
        start = starts[index]
        tail += sum(costs[start : starts[index + 1] if index + 1 < len(starts) else None])
        if tail > keep and start != starts[-1]:
            break
        chosen = start
    return chosen if chosen > head else None


def compaction_message(summary: str | None, replaced: int, kept: int) -> Message:
    """The message that records a compaction: the summary (or, without one, a note that the
    messages were left out), and how many messages before it stay verbatim."""
    if summary is not None:
        text = (f"[Summary of {replaced} earlier messages, which were compacted to fit the "
                f"context window]\n{summary.strip()}")
        mode = "summary"
    else:
        text = (f"[{replaced} earlier messages were left out to fit the context window; "
                "the task above and the latest messages are intact]")
        mode = "drop"
    return Message("system", text,
                   metadata={MARKER: {"kept": kept, "replaced": replaced, "mode": mode}})
