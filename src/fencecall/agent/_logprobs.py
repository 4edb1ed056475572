"""The scored tokens a reply keeps: those that cover the text kept of it.

A reply stopped at its first complete call keeps its text up to the end of that call (see
:func:`fencecall.agent._reading._up_to`); its tokens are kept as far as they make up that
text, so that what a trainer reads from the log is what the model was shown again. A token
that straddles the cut (``"```\\n"`` where the text ends at the fence) stays: every kept
character has its token, and the tokens' text runs past the kept text by less than one token.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..message import TokenLogprob


def kept_scores(scores: Sequence[TokenLogprob], streamed: str,
                kept: str | None) -> tuple[TokenLogprob, ...] | None:
    """The tokens of ``scores`` (those of ``streamed``, the text as it came) that cover
    ``kept`` (None: the whole reply was kept); None where the server scored none."""
    if not scores:
        return None
    if kept is None:
        return tuple(scores)
    end = len(kept) if streamed.startswith(kept) else _streamed_length(streamed, len(kept))
    covering, start = [], 0
    for token in scores:
        if start >= end:
            break
        covering.append(token)
        start += len(token.token)
    return tuple(covering)


def _streamed_length(streamed: str, kept: int) -> int:
    """How much of ``streamed`` makes ``kept`` characters once its line ends are
    normalised (``\\r\\n`` and ``\\r`` read as one ``\\n``, as the parser reads them)."""
    at = seen = 0
    while at < len(streamed) and seen < kept:
        at += 2 if streamed.startswith("\r\n", at) else 1
        seen += 1
    return at
