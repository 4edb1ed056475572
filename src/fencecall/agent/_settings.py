"""How an agent runs, fixed when it is built: an agent is never reconfigured afterwards."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import Executor
from dataclasses import dataclass, field

from ..config import Compaction, Sampling
from ..defaults import COMPACTION, FEEDBACK_LIMIT, MAX_STEPS, MAX_TOKENS, RESULT_SHARE, RETRIES
from ..parsing import MARKDOWN, FormatLike


@dataclass(frozen=True, slots=True)
class AgentSettings:
    """The settings of an :class:`~fencecall.agent.Agent`.

    ``max_tokens`` is the output limit asked of the model; ``retries`` how often a broken
    reply stream is asked for again (waiting ``backoff`` seconds, doubled each time, with
    ``sleep`` in :meth:`~fencecall.agent.Agent.send`). A reply that ran nothing but meant to
    (a near miss, a block of a tool not loaded, a malformed call, a loop) is answered with
    feedback and the loop goes on, at most ``feedback_limit`` times in a row (0: no
    feedback; such a reply ends the turn).

    ``autonomous``: nobody reads the replies, so only a call of the complete tool (which the
    session's tools must hold) ends the run done; a reply without a call is reminded of it,
    within the same ``feedback_limit`` (0: such a reply ends the run as given up).

    With a ``context_window`` (and ``compaction`` not ``off``) requests are kept inside it,
    and a tool result above ``result_share`` of it is saved to a file: the model gets its
    start and end and the path (see :mod:`._spill`).

    ``interruptible``: replies are read in a thread of their own even without a time limit,
    so that an interrupt raised in the agent's thread from elsewhere (an editor's cancel)
    stops a reply whose server is silent, not only at its next event. ``executor`` is where
    :meth:`~fencecall.agent.Agent.asend` runs blocking work (None: the event loop's default
    executor, whose few threads suit a handful of sessions; a batch gives one of its own).
    """

    fmt: FormatLike = MARKDOWN
    max_steps: int = MAX_STEPS
    max_tokens: int = MAX_TOKENS
    retries: int = RETRIES
    backoff: float = 1.0
    feedback_limit: int = FEEDBACK_LIMIT
    sampling: Sampling = field(default_factory=Sampling)
    compact: bool = False
    """A shorter system prompt."""
    context_window: int | None = None
    compaction: Compaction = COMPACTION
    result_share: float = RESULT_SHARE
    autonomous: bool = False
    vision: bool = True
    """The model takes images; else each is sent as a note (see :class:`ChatRequest`)."""
    interruptible: bool = False
    sleep: Callable[[float], None] = time.sleep
    executor: Executor | None = None
    checkpoints: bool = False
    """Record the workspace before each call that can write and at the end of each turn,
    in the conversation's folder (one kept in memory has none), so ``/undo`` can put it
    back (see :mod:`fencecall.checkpoints`). The chat and the editors' agent keep them;
    batch tasks and evaluation trials, in workspaces of their own, do not."""
