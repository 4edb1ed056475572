"""The loop is written once, as a generator of waits, and two drivers perform the waits.

A step of the loop never blocks itself: it yields what it waits for (the model's reply to a
request, blocking work such as tools running, a pause) and is sent what that came to. The
blocking driver (:func:`drive`) performs each wait in its own thread; the asynchronous one
(:func:`adrive`) on an event loop, with blocking work in an executor's threads. So the sync
and async agents share every decision and differ only in how they wait, as httpx's two
clients share one base.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import Executor
from contextlib import closing
from dataclasses import dataclass

from ..message import Outcome
from ..providers import ChatRequest
from .offload import in_thread


@dataclass(frozen=True, slots=True)
class Ask:
    """Wait for the model's reply to ``request``."""

    request: ChatRequest


@dataclass(frozen=True, slots=True)
class Blocking:
    """Wait for blocking work: tools running, a compaction, a shared budget."""

    work: Callable[[], object]


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait ``seconds`` (a retry's backoff)."""

    seconds: float


Effect = Ask | Blocking | Pause
Steps = Generator[Effect, object, Outcome]


def _advance(steps: Steps, value: object, error: Exception | None) -> Effect | Outcome:
    """The next wait of ``steps``, given what the last one came to, or how they ended."""
    try:
        return steps.send(value) if error is None else steps.throw(error)
    except StopIteration as done:
        outcome: Outcome = done.value
        return outcome


def drive(steps: Steps, ask: Callable[[ChatRequest], object],
          sleep: Callable[[float], None]) -> Outcome:
    """Run ``steps`` here, blocking on each wait."""
    value: object = None
    error: Exception | None = None
    with closing(steps):
        while not isinstance(effect := _advance(steps, value, error), Outcome):
            value, error = None, None
            try:
                if isinstance(effect, Ask):
                    value = ask(effect.request)
                elif isinstance(effect, Pause):
                    sleep(effect.seconds)
                else:
                    value = effect.work()
            except Exception as err:
                error = err
    return effect


async def adrive(steps: Steps, ask: Callable[[ChatRequest], Awaitable[object]],
                 executor: Executor | None) -> Outcome:
    """Run ``steps`` on the event loop: replies are read there, blocking work goes to the
    threads of ``executor`` (None: the loop's default one)."""
    value: object = None
    error: Exception | None = None
    with closing(steps):
        while not isinstance(effect := _advance(steps, value, error), Outcome):
            value, error = None, None
            try:
                if isinstance(effect, Ask):
                    value = await ask(effect.request)
                elif isinstance(effect, Pause):
                    await asyncio.sleep(effect.seconds)
                else:
                    value = await in_thread(effect.work, executor)
            except Exception as err:
                error = err
    return effect
