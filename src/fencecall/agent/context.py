"""Keeping a request inside a model's context window (small local models have 2k to 8k).

Token counts are estimated from characters (three per token: small vocabularies and code
run denser than English prose), so the estimate errs towards leaving room. Old exchanges are
left out whole, oldest first, never the task itself nor the latest exchange; when even those
do not fit, the user is told, not the server.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import UserError
from ..message import Message

CHARS_PER_TOKEN = 3
MESSAGE_OVERHEAD = 4
"""Tokens a chat template spends around each message."""


class ContextOverflow(UserError):
    """The prompt, the task and the latest exchange cannot fit the context window."""


def estimate(text: str) -> int:
    """An estimate of ``text``'s tokens that errs high."""
    return len(text) // CHARS_PER_TOKEN + 1


def fit(system: str, messages: Sequence[Message], window: int,
        reply_tokens: int) -> tuple[Message, ...]:
    """``messages``, with the oldest exchanges after the first user message left out (and a
    note saying so) until the system prompt, the messages and a reply of ``reply_tokens``
    fit ``window``."""
    budget = window - reply_tokens - estimate(system) - MESSAGE_OVERHEAD
    if budget <= 0:
        raise ContextOverflow(
            f"the system prompt (about {estimate(system)} tokens) and a reply of up to "
            f"{reply_tokens} tokens do not fit the context window of {window} tokens; use "
            "--prompt compact, fewer tools (--tools), or a smaller --max-tokens")
    cost = [estimate(m.content) + MESSAGE_OVERHEAD for m in messages]
    if sum(cost) <= budget:
        return tuple(messages)
    first = next((i for i, m in enumerate(messages) if m.role == "user"), 0)
    groups = _exchanges(range(first + 1, len(messages)), messages)
    head = list(range(first + 1))
    while len(groups) > 1:
        groups.pop(0)
        left_out = len(messages) - len(head) - sum(len(g) for g in groups)
        note = Message("system", f"[{left_out} earlier messages were left out to fit the "
                                 f"context window of {window} tokens]")
        kept = head + [i for group in groups for i in group]
        if sum(cost[i] for i in kept) + estimate(note.content) + MESSAGE_OVERHEAD <= budget:
            return (*(messages[i] for i in head), note,
                    *(messages[i] for group in groups for i in group))
    needed = sum(cost[i] for i in head + [i for g in groups for i in g])
    raise ContextOverflow(
        f"the task and the latest exchange need about {needed} tokens, but only {budget} of "
        f"the context window of {window} tokens are left after the system prompt and the "
        "reply; shorten the task, use --prompt compact, or a smaller --max-tokens")


def _exchanges(indices: range, messages: Sequence[Message]) -> list[list[int]]:
    """Indices grouped so that a reply and the results it got stay together."""
    groups: list[list[int]] = []
    for index in indices:
        if not groups or messages[index].role in ("user", "assistant"):
            groups.append([index])
        else:
            groups[-1].append(index)
    return groups
