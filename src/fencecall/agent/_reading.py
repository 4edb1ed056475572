"""Reading one model reply: stream it, stop it at its first complete runnable call, bill it.

Generation stops as soon as the incremental parser reports a complete runnable call: the
model cannot write past its own call (hallucinating the result) and no tokens are wasted; a
reply that arrived whole is cut right after that call the same way. Native calls (``tool``
format) are collected until the stream ends. A reply that keeps repeating itself is cut too.

Every request is billed once, whatever ends its reading: a reply whole or cut, a time limit, a
Ctrl-C, a stream that broke off (its cost goes with the next reply) or a request the server
refused (no cost). A compaction's summary is read by the same code, without looking for calls.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import time
from collections.abc import Callable
from concurrent.futures import Executor
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import TypeVar

from .. import telemetry
from ..accounting import Billing, Exactness, Refusal, Spend
from ..accounting.checks import CUT_AT_BUDGET
from ..execution import resolve
from ..message import Message, NativeCallRecord, ReplyRecord, TokenLogprob
from ..parsing import CallFormat, Diagnostic, StreamParser, ToolCall
from ..providers import (
    ChatRequest,
    NativeCall,
    Provider,
    ProviderError,
    Scores,
    StreamBroken,
    StreamEnd,
    StreamEvent,
    TextDelta,
    Usage,
)
from ..providers.base import has_astream
from ..tools import Toolchain
from ._deadline import Bounded, DeadlinePassed
from ._events import EventSink, ReplyDone, ReplyText
from ._logprobs import kept_scores
from ._repetition import RepetitionGuard
from .offload import in_thread

R = TypeVar("R")

LOOPED = ("Your reply was cut: it repeated {} and was not taken as an answer. Think about "
          "what the task still needs, then write one step or the answer, without repeating.")


@dataclass(slots=True)
class Reply:
    """A reply as the loop acts on it: its message (stored as it is), the calls to run."""

    message: Message
    calls: list[ToolCall]
    diagnostics: list[Diagnostic]
    interrupted: bool = False
    cut: bool = False
    native: list[ToolCall] = field(default_factory=list)
    looped: str | None = None
    """The message telling the model its reply looped and was cut."""
    limit: Refusal | None = None
    """The limit that cut the reply as it streamed (the time limit, a budget): the run ends."""


@dataclass(slots=True)
class _Reading:
    """A reply as it streams in (``parser`` None: a summary, read without calls)."""

    parser: StreamParser | None
    run: telemetry.ChatRun
    guard: RepetitionGuard = field(default_factory=RepetitionGuard)
    text: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    native: list[NativeCall] = field(default_factory=list)
    scores: list[TokenLogprob] = field(default_factory=list)
    end: StreamEnd | None = None
    usage: Usage | None = None
    stopped_early: bool = False
    interrupted: bool = False
    out_of_time: bool = False
    looped: str | None = None

    @property
    def finish_reason(self) -> str | None:
        if self.out_of_time:
            return "time-limit"
        if self.stopped_early and not self.interrupted:
            return "tool_call"
        if self.looped is not None:
            return "loop"
        return self.end.stop_reason if self.end else "interrupted"


class ReplyReader:
    """Reads the replies of ``model`` through ``provider`` and bills each through
    ``billing``, telling ``emit`` of the text as it streams and of each reply read.

    ``interruptible``: the stream is read in a thread of its own even without a time limit,
    so an interrupt raised in the reading thread from elsewhere stops a silent server.
    ``executor`` runs the blocking parts of :meth:`aread`."""

    def __init__(self, provider: Provider, model: str, fmt: CallFormat, toolchain: Toolchain,
                 billing: Billing, emit: EventSink, *, interruptible: bool = False,
                 executor: Executor | None = None):
        self.provider, self.model, self.format = provider, model, fmt
        self.toolchain, self.billing, self._emit = toolchain, billing, emit
        self.interruptible, self.executor = interruptible, executor

    def read(self, request: ChatRequest) -> Reply:
        """Stream one reply; stop it at its first complete runnable call."""
        reading = self._start(calls=True)
        self._pull(request, reading)
        return self._finish(request, reading)

    async def aread(self, request: ChatRequest) -> Reply:
        """:meth:`read` on the event loop (in a thread for a provider that can only stream
        synchronously)."""
        if not has_astream(self.provider):
            return await in_thread(lambda: self.read(request), self.executor)
        reading = self._start(calls=True)
        deadline = self.billing.spend.deadline
        limit = asyncio.timeout(None if deadline is None else deadline - time.monotonic())
        try:
            async with limit, aclosing(self.provider.astream(self._capped(request))) as events:
                async for event in events:
                    if self._take(reading, event):
                        break
        except TimeoutError:
            if not limit.expired():
                raise
            self._out_of_time(reading)
        except Exception as err:
            await self._in_thread_if_slow(reading, functools.partial(
                self._failed, request, reading, err))
            raise
        except asyncio.CancelledError as err:  # the run was stopped: the request still cost
            self._failed(request, reading, err)
            raise
        return await self._in_thread_if_slow(reading, functools.partial(
            self._finish, request, reading))

    def summary(self, request: ChatRequest) -> tuple[str, ReplyRecord] | None:
        """The text of a reply read whole, without looking for calls, and its record; None
        where there is none (the server failed or refused, the time limit passed, the text
        is empty), what it cost kept for the next reply's record. Ctrl-C still stops."""
        reading = self._start(calls=False)
        try:
            self._pull(request, reading)
        except ProviderError:
            return None
        billed, counted = self.billing.charge(
            request, reading.usage, "".join(reading.text), reading.run,
            finish_reason="time-limit" if reading.out_of_time
            else "interrupted" if reading.interrupted else "summary")
        text = "".join(reading.text).strip()
        if reading.interrupted or reading.out_of_time or not text:
            self.billing.carry(billed)
            if reading.interrupted:
                raise KeyboardInterrupt
            return None
        return text, self._record(billed, counted)

    def _start(self, *, calls: bool) -> _Reading:
        return _Reading(StreamParser(self.format) if calls else None, telemetry.current().chat(
            self.model, provider=self.provider.name, url=self.provider.url))

    def _pull(self, request: ChatRequest, reading: _Reading) -> None:
        """Read ``request``'s stream into ``reading`` until it ends or is stopped; a reading
        that fails is billed before the error goes on."""
        deadline = self.billing.spend.deadline
        stream = self.provider.stream(self._capped(request))
        events = stream if deadline is None and not self.interruptible else Bounded(
            stream, math.inf if deadline is None else deadline)
        try:
            for event in events:
                if self._take(reading, event):
                    break
        except KeyboardInterrupt:
            reading.stopped_early = reading.interrupted = True
            reading.text.append("\n[interrupted by the user]")
        except DeadlinePassed:
            self._out_of_time(reading)
        except Exception as err:
            self._failed(request, reading, err)
            raise
        finally:
            events.close()

    def _capped(self, request: ChatRequest) -> ChatRequest:
        """``request`` with the output its budgets leave, where its reply is cut."""
        return replace(request, output_room=self.billing.spend.output_room())

    @staticmethod
    def _out_of_time(reading: _Reading) -> None:
        reading.out_of_time = True
        reading.text.append("\n[cut at the time limit]")

    async def _in_thread_if_slow(self, reading: _Reading, work: Callable[[], R]) -> R:
        """``work`` (billing), in a thread where counting the reply may take a while."""
        if self.billing.charging_waits(reading.usage):
            return await in_thread(work, self.executor)
        return work()

    def _take(self, reading: _Reading, event: StreamEvent) -> bool:
        """Take one event of the reply; True: stop reading (a complete call, a loop)."""
        if isinstance(event, TextDelta):
            reading.text.append(event.text)
            if reading.parser is None:
                return False
            self._emit(ReplyText(event.text))
            reading.calls = self._first_runnable(reading.parser.feed(event.text))
            if reading.calls:
                reading.stopped_early = True
                return True
            reading.looped = reading.guard.feed(event.text)
            return reading.looped is not None
        if isinstance(event, Scores):
            reading.scores.extend(event.tokens)
        elif isinstance(event, NativeCall):
            reading.native.append(event)
        elif isinstance(event, Usage):
            reading.usage = event
        else:
            reading.end = event
        return False

    def _failed(self, request: ChatRequest, reading: _Reading, err: BaseException) -> None:
        """Count a reply whose reading failed: a request the provider refused (an HTTP
        error) is not billed; one that broke off or was stopped is, for what it got."""
        if isinstance(err, ProviderError) and not isinstance(err, StreamBroken):
            self.billing.refused(reading.run, err)
            return
        self.billing.charge_lost(request, reading.usage, "".join(reading.text), reading.run,
                                 error_type=type(err).__name__)

    def _finish(self, request: ChatRequest, reading: _Reading) -> Reply:
        """The reply of a reading that ended (whole, cut at a call, interrupted, out of
        time), billed."""
        assert reading.parser is not None
        end, stopped_early, looped = reading.end, reading.stopped_early, reading.looped
        billed, counted = self.billing.charge(request, reading.usage, "".join(reading.text),
                                              reading.run, finish_reason=reading.finish_reason)
        limit = _limit_of(reading, self.billing.spend)
        calls = reading.calls
        if not stopped_early and looped is None and limit is None:
            calls = self._first_runnable(reading.parser.finish())
        reply = "".join(reading.text)
        if limit is not None and not reading.out_of_time:  # noted once billed: cost nothing
            reply += f"\n[cut where the {limit.what} ran out]"
        if calls and stopped_early:
            reply = _up_to(reply, calls[0])
        scores = kept_scores(reading.scores, "".join(reading.text),
                             reply if calls and stopped_early else None)
        native_calls = [self._native_call(call) for call in reading.native]
        cut = end is not None and end.cut and not stopped_early
        billed, counted = self.billing.with_carried(billed, counted)  # broken attempts
        message = Message("assistant", reply, reply=self._record(
            billed, counted, tuple(NativeCallRecord(call.call_id or "", call.name,
                                                    dict(call.kwargs)) for call in native_calls),
            cut=cut, stop_reason=end.stop_reason if cut and end else None, loop=looped,
            logprobs=scores))
        self._emit(ReplyDone(message, stopped_early or looped is not None))
        diagnostics = [] if looped is not None else reading.parser.diagnostics
        return Reply(message, [] if reading.interrupted or limit is not None else calls,
                     diagnostics, reading.interrupted, cut, native_calls,
                     None if looped is None else LOOPED.format(looped), limit)

    def _record(self, billed: Usage, counted: Exactness | None,
                native: tuple[NativeCallRecord, ...] = (), *, cut: bool = False,
                stop_reason: str | None = None, loop: str | None = None,
                logprobs: tuple[TokenLogprob, ...] | None = None) -> ReplyRecord:
        return ReplyRecord(self.model, self.provider.name, self.provider.url or None, billed,
                           native, cut, stop_reason, loop, counted, logprobs)

    def _first_runnable(self, calls: list[ToolCall]) -> list[ToolCall]:
        return [call for call in calls if resolve(call, self.toolchain) is not None][:1]

    def _native_call(self, call: NativeCall) -> ToolCall:
        """A native call as a ToolCall named as the toolchain names it; arguments that are not
        a JSON object reach the tool as one odd argument, so the model is told its call was
        malformed."""
        try:
            arguments = json.loads(call.arguments, strict=False)
        except json.JSONDecodeError:
            arguments = None
        if not isinstance(arguments, dict):
            arguments = {"arguments (not a JSON object)": call.arguments}
        spec = self.toolchain.get(call.name)
        return ToolCall(spec.name if spec else call.name, kwargs=arguments,
                        call_id=call.call_id, format=self.format.name)


def _limit_of(reading: _Reading, spend: Spend) -> Refusal | None:
    """The limit that cut ``reading`` as it streamed (the run ends there), or None."""
    if reading.out_of_time:
        refused = spend.over_time()
        assert refused is not None  # the limit has passed
        return refused
    if reading.end is not None and reading.end.stop_reason == CUT_AT_BUDGET:
        return spend.ran_out()
    return None


def _up_to(reply: str, call: ToolCall) -> str:
    """The reply up to the end of its first call: what the model wrote after it (a made-up
    result, more calls) is dropped before it is stored or sent back."""
    if call.end:  # an offset in the text as the parser read it, line ends normalised
        return reply.replace("\r\n", "\n").replace("\r", "\n")[: call.end]
    return reply[: reply.rfind("\n") + 1].rstrip("\n")
