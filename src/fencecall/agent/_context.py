"""Keeping a long session inside the model's context window, and its prompt cache warm.

One budget and one trigger: a request may hold ``window - reply - headroom`` tokens. Below
that, history is append-only, so each request's messages are a prefix of the next request's
and provider prefix caches keep hitting. When the next request would not fit, the older
exchanges are replaced once (a *compaction*): by a summary the model writes, or, where none
can be had, by a note that they were left out. The compaction is a system message appended to
the log (its note a :class:`~fencecall.message.Compacted`) saying how many messages before it
stay verbatim; a request
is built from the log as the messages up to the task, the compaction's text, the kept messages
and what came after (:func:`view`). So the prefix stays fixed until the next compaction, and
since each leaves at most :data:`KEEP_SHARE` of the budget, compactions grow with the size of
the history, not with the number of requests. The log keeps every original message.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from ..accounting import Billing
from ..accounting.tokens import MESSAGE_OVERHEAD
from ..config import Compaction
from ..errors import UserError
from ..images import messages_image_tokens
from ..message import Compacted, Message, ReplyRecord
from ..providers import ChatRequest
from ..providers.base import wire_texts
from ._reading import ReplyReader
from ._settings import AgentSettings

KEEP_SHARE = 3
"""A compaction keeps at most 1/KEEP_SHARE of the budget verbatim (the latest exchanges)."""
SUMMARY_SHARE = 8
"""A summary may take at most 1/SUMMARY_SHARE of the window."""
HEADROOM_SHARE = 50
"""Tokens kept free beyond the reply: 1/HEADROOM_SHARE of the window (at least
:data:`MIN_HEADROOM`), for counts that are off by a little."""
MIN_HEADROOM = 64
_UNKNOWN = 1 << 40
"""The window of a run that keeps none (compaction off): only ``/compact`` compacts it."""

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
    return isinstance(message.note, Compacted)


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
    assert isinstance(marker.note, Compacted)
    kept_count = marker.note.kept
    before = [m for m in messages[head:last] if not is_compaction(m)]
    kept = before[max(len(before) - kept_count, 0):] if kept_count else []
    after = [m for m in messages[last + 1 :] if not is_compaction(m)]
    return (*messages[:head], marker, *kept, *after)


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
        mode: Literal["summary", "drop"] = "summary"
    else:
        text = (f"[{replaced} earlier messages were left out to fit the context window; "
                "the task above and the latest messages are intact]")
        mode = "drop"
    return Message("system", text, note=Compacted(kept, replaced, mode))


class Compactor:
    """Keeps an agent's requests inside its window (see the module's docstring).

    ``request`` builds the next request from the conversation as it is now, ``record``
    appends a message to it; the summary is read by the agent's ``reader`` and billed as
    every reply is."""

    def __init__(self, settings: AgentSettings, billing: Billing, reader: ReplyReader,
                 request: Callable[[], ChatRequest], record: Callable[[Message], None]):
        self.window = (Window(settings.context_window, settings.max_tokens, settings.compaction)
                       if settings.context_window is not None and settings.compaction != "off"
                       else None)
        """Where requests are kept inside the window (None: they are sent as they are)."""
        self._max_tokens = settings.max_tokens
        self._asked = Window(settings.context_window or _UNKNOWN, settings.max_tokens)
        """The window a compaction asked for by hand (``/compact``) keeps within."""
        self._billing, self._reader = billing, reader
        self._request, self._record = request, record

    def fits(self, request: ChatRequest) -> bool:
        """Whether ``request`` may be sent as it is."""
        window = self.window
        return window is None or self._billing.next_input(request) <= window.budget

    def check_fits(self, request: ChatRequest) -> None:
        """Raise :class:`ContextOverflow` where ``request``, compacted already, still does not
        fit, saying what takes the room."""
        window = self.window
        if window is None:
            return
        needed = self._billing.next_input(request)
        if needed <= window.budget:
            return
        fixed = self._billing.next_input(replace(request, messages=request.messages[:0]))
        if fixed > window.budget:
            raise ContextOverflow(
                f"the system prompt (about {fixed} tokens) and a reply of up to "
                f"{window.reply_tokens} tokens do not fit the context window of "
                f"{window.size} tokens; use --prompt compact, fewer tools (--tools), or a "
                "smaller --max-tokens")
        raise ContextOverflow(
            f"the task and the latest exchange need about {needed} tokens, but only "
            f"{window.budget} of the context window of {window.size} tokens are left "
            "after the reply and its headroom; shorten the task, use --prompt compact, "
            "or a smaller --max-tokens")

    def compact(self, keep: int | None = None) -> Message | None:
        """Replace the older exchanges of the conversation (all but the task and the latest
        ones that cost at most ``keep`` tokens, by default a third of the budget; at least the
        latest exchange) by the model's summary of them, or, where none can be had
        (``compaction = "drop"``, the model failed), by a note that they were left out. The
        compaction is recorded; None where there is nothing to compact."""
        window = self.window or self._asked
        request = self._request()
        messages = request.messages
        count = self._billing.counter.count
        costs = [count(text) + MESSAGE_OVERHEAD + messages_image_tokens([message])
                 for text, message in zip(wire_texts(messages), messages, strict=True)]
        end = boundary(messages, costs, window.budget // KEEP_SHARE if keep is None else keep)
        if end is None:
            return None
        summary = self._summary(request, end, window) if window.compaction == "summary" else None
        marker = compaction_message(summary[0] if summary else None,
                                    end - head_length(messages), len(messages) - end)
        if summary is not None:
            marker = replace(marker, reply=summary[1])
        self._record(marker)
        return marker

    def _summary(self, request: ChatRequest, end: int,
                 window: Window) -> tuple[str, ReplyRecord] | None:
        """The model's summary of ``request``'s messages before ``end``, asked on the same
        prefix (so it reads the prompt cache), and the record of that request; None where
        it cannot be had (it would not fit, a limit refuses it, the model fails)."""
        ask = replace(request, messages=(*request.messages[:end],
                                         Message("user", SUMMARY_REQUEST)),
                      max_tokens=window.summary_tokens)
        if window.size != _UNKNOWN and \
                self._billing.next_input(ask) + window.summary_tokens > window.size:
            return None
        if self._billing.refusal(ask, self._max_tokens) is not None:
            return None
        return self._reader.summary(ask)
