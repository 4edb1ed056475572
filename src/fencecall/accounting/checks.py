"""What a server says it spent, and what it sends, is checked, never taken as it is.

Usage is believed only when it could be true (:func:`count_of`, :meth:`ReplyBounds.believable`);
otherwise fencecall counts the reply itself, as it does a reply that reported none. A reply is
tallied as it streams and cut once it is surely past ``max_tokens`` or past what the budget
leaves, whichever comes first (:meth:`ReplyBounds.cut`), so a server that ignores
``max_tokens`` can neither fill memory nor spend past a budget. And the limits charge the
larger of a report and fencecall's own count (:func:`larger`): a report is no proof.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from ..message import Usage
from .tokens import Tally

MOST_BYTES_PER_TOKEN = 8
"""More bytes a token than any vocabulary averages over a reply (byte-level BPE averages 3 to
5 for prose and code), so a reply of more than this many bytes a token of ``max_tokens`` is
surely past it, and an honest one is never cut short."""
OUTPUT_SLACK = 16
"""Output tokens a reply may take beyond its text (a stop token, other special tokens)."""
TEMPLATE_ROOM = 8192
"""Input tokens a chat template may add to a request beyond its text (a default system
prompt, tool instructions): a few hundred in the templates we know, this many at most."""
CUT_AT_MAX_TOKENS = "max_tokens (cut by fencecall)"
"""The stop reason of a reply fencecall cut because the server sent past ``max_tokens``."""
CUT_AT_BUDGET = "budget (cut by fencecall)"
"""The stop reason of a reply fencecall cut where the run's budget ran out."""


def count_of(value: object, missing: int | None = None) -> int | None:
    """``value`` as a token count: a whole number, not negative. None where it is anything
    else (a string, a fraction, a negative number), or missing and ``missing`` is None."""
    if value is None:
        return missing
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return value
    return None


@dataclass(frozen=True, slots=True)
class ReplyBounds:
    """What one reply may take and what its request may have cost.

    ``max_tokens`` is what the server was asked for; ``room`` the output tokens the budgets
    leave (fencecall's count; None: no budget holds); ``input_ceiling`` the most tokens the
    request's text can be (one a byte, :class:`~.tokens.Bytes`), asked only if usage comes.
    """

    max_tokens: int
    room: int | None
    input_ceiling: Callable[[], int]

    def cut(self, taken: Tally) -> str | None:
        """The stop reason to cut the reply with once ``taken`` (all of it so far) is too
        much, else None: past ``max_tokens`` only once surely past it (see
        :data:`MOST_BYTES_PER_TOKEN`), past the budget's room by fencecall's estimate, which
        errs high, since that is what the budget is charged."""
        if taken.size > MOST_BYTES_PER_TOKEN * self.max_tokens:
            return CUT_AT_MAX_TOKENS
        if self.room is not None and taken.estimate > self.room:
            return CUT_AT_BUDGET
        return None

    def believable(self, usage: Usage, taken: Tally) -> bool:
        """Whether ``usage`` could be true of a reply of ``taken``: no count negative; no
        more output than was asked for or received (a token is a byte at least), give or take
        :data:`OUTPUT_SLACK`; no more input than the request's text and
        :data:`TEMPLATE_ROOM`. (A count that is not a number never became one: see
        :func:`count_of`.)"""
        counts = (usage.input_tokens, usage.output_tokens, usage.cache_read_tokens,
                  usage.cache_write_tokens)
        return (min(counts) >= 0
                and usage.output_tokens <= max(self.max_tokens, taken.size) + OUTPUT_SLACK
                and usage.all_input <= self.input_ceiling() + TEMPLATE_ROOM)


def larger(reported: Usage, counted: Usage) -> Usage:
    """``reported`` raised to fencecall's ``counted`` where that is more, as the limits are
    charged: the input as a whole (a count knows nothing of the cache; the excess is charged
    as uncached input), and the output."""
    extra = max(0, counted.all_input - reported.all_input)
    return replace(reported, input_tokens=reported.input_tokens + extra,
                   output_tokens=max(reported.output_tokens, counted.output_tokens))
