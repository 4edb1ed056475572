"""The agent loop: stream a reply, stop at the first complete call, run it, repeat.

Generation stops as soon as the incremental parser reports a complete runnable call: the
model cannot write past its own call (hallucinating the result) and no tokens are wasted; a
reply that arrived whole is cut right after that call the same way. Native calls (``tool``
format) are collected until the stream ends. Results are appended as system messages and
the loop continues until a reply has no call or the step limit is hit.

An autonomous run (nobody reads the replies) ends done only when the model calls the complete
tool: a reply with no call is no answer there (real replies stop short: ``TH``, a sentence
cut off), so it gets a reminder of how to go on and how to finish, counted as the feedback
on near misses is.

A stream that breaks off (no stop reason, an unreadable event) is never taken for an answer:
the reply is asked for again, with backoff, and reported if it keeps breaking. A reply cut at
the output token limit is kept as cut, and the model is asked to continue it.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import time
from collections.abc import Callable, Generator, Sequence
from contextlib import aclosing, closing
from dataclasses import dataclass, field, replace
from pathlib import Path

from .. import telemetry
from ..accounting import Billing, Estimate, Pricing, Refusal, Spend, TokenCounter
from ..accounting.checks import CUT_AT_BUDGET
from ..accounting.tokens import MESSAGE_OVERHEAD
from ..execution import Session, resolve
from ..message import Message, NativeCallRecord, Outcome, ReplyRecord, Status, system
from ..parsing import (
    CallFormat,
    Diagnostic,
    StreamParser,
    ToolCall,
    get_format,
    parse_calls,
)
from ..providers import (
    ChatRequest,
    NativeCall,
    Provider,
    ProviderError,
    StreamBroken,
    StreamEnd,
    StreamEvent,
    TextDelta,
    Usage,
)
from ..providers.base import has_astream, wire_texts
from ..tools.builtin.complete import NAME as COMPLETE
from ..tools.builtin.complete import completes, how_to_finish
from ..tools.builtin.jobs import LOG_FOLDER as JOBS
from ..tools.builtin.jobs import ended_notice as job_ended
from .context import (
    KEEP_SHARE,
    SUMMARY_REQUEST,
    ContextOverflow,
    Window,
    boundary,
    compaction_message,
    head_length,
    view,
)
from .conversation import Conversation
from .deadline import Bounded, DeadlinePassed
from .feedback import reply_feedback
from .offload import in_thread
from .prompt import system_prompt
from .repetition import RepetitionGuard
from .settings import AgentSettings
from .spill import outputs_folder, spill

SAVED_OUTPUT_LIMIT = 8_000_000
"""Characters of a command's output tools keep where results are saved to files."""
_UNKNOWN = 1 << 40
"""The window of a run that keeps none (compaction off): only ``/compact`` compacts it."""
UNFINISHED = ("No result was recorded for this call: fencecall stopped while it was running "
              "(or before it started). It may have run in part; check before repeating it.")
LOOPED = ("Your reply was cut: it repeated {} and was not taken as an answer. Think about "
          "what the task still needs, then write one step or the answer, without repeating.")
CONTINUE = ("Your reply was cut off at the output token limit ({limit} tokens). Continue "
            "exactly where it stopped; if it was a long file, split the work into parts.")
REMINDER = ("Your reply ran no tool and did not call complete, so the task goes on. Continue "
            "with a tool call. {finish}")


@dataclass(frozen=True, slots=True)
class ReplyText:
    """A piece of the model's reply as it streams."""

    text: str


@dataclass(frozen=True, slots=True)
class ReplyDone:
    """The model's reply is complete (``stopped_early`` when cut at a call)."""

    message: Message
    stopped_early: bool


@dataclass(frozen=True, slots=True)
class CallsFound:
    """The calls of a reply, about to run in order; each one's results follow as
    :class:`ToolResult` events, its last result carrying its record (``message.call``)."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class ToolResult:
    message: Message


@dataclass(frozen=True, slots=True)
class Retrying:
    """The reply stream broke; the reply is asked for again after ``delay`` seconds."""

    reason: str
    attempt: int
    attempts: int
    delay: float


@dataclass(frozen=True, slots=True)
class StepLimit:
    steps: int


AgentEvent = ReplyText | ReplyDone | CallsFound | ToolResult | Retrying | StepLimit
EventSink = Callable[[AgentEvent], None]


@dataclass(frozen=True, slots=True)
class RunResult:
    """What :meth:`Agent.run` gives back: how the run ended, the model's last words, and the
    messages the run added to the conversation (the prompt first)."""

    outcome: Outcome
    answer: str
    messages: tuple[Message, ...]

    @property
    def done(self) -> bool:
        """The model answered (rather than being stopped by a limit, itself, or the user)."""
        return self.outcome is Outcome.DONE


@dataclass(slots=True)
class _Reply:
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
    """A reply as it streams in."""

    parser: StreamParser
    run: telemetry.ChatRun
    guard: RepetitionGuard = field(default_factory=RepetitionGuard)
    text: list[str] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    native: list[NativeCall] = field(default_factory=list)
    end: StreamEnd | None = None
    usage: Usage | None = None
    stopped_early: bool = False
    interrupted: bool = False
    out_of_time: bool = False
    looped: str | None = None


@dataclass(slots=True)
class _Ran:
    """What came of a reply's calls."""

    interrupted: bool = False
    told: bool = False
    """A result told the model something went wrong (a diagnostic)."""
    complete: bool = False


@dataclass(frozen=True, slots=True)
class _Ask:
    """A step of the loop waits for the model's reply to ``request``.

    The loop is written once, as a generator of such waits (this, :class:`_Blocking`,
    :class:`_Pause`); :meth:`Agent.send` performs them in its own thread, :meth:`Agent.asend`
    on an event loop. The generator never blocks itself.
    """

    request: ChatRequest


@dataclass(frozen=True, slots=True)
class _Blocking:
    """A step waits for blocking work: tools running, a compaction, a shared budget."""

    work: Callable[[], object]


@dataclass(frozen=True, slots=True)
class _Pause:
    """A step waits ``seconds`` (a retry's backoff)."""

    seconds: float


_Effect = _Ask | _Blocking | _Pause
Steps = Generator[_Effect, object, Outcome]


def _advance(steps: Steps, value: object, error: Exception | None) -> _Effect | Outcome:
    """The next wait of ``steps``, given what the last one came to, or how they ended."""
    try:
        return steps.send(value) if error is None else steps.throw(error)
    except StopIteration as done:
        outcome: Outcome = done.value
        return outcome


class Agent:
    """Runs a conversation (in memory unless one is given) against a model with the tools of
    a session, as its ``settings`` say (see :class:`AgentSettings`).

    ``counter`` counts the requests and replies the provider reports no usage for (default:
    an estimate); ``spend`` holds every request's tokens and cost, checked against its limits
    before each request (default: no limits). The agent bills through its :attr:`billing`,
    and tells the session once, here, what it needs of it (see
    :meth:`~fencecall.execution.Session.serve_agent`).
    """

    def __init__(self, provider: Provider, model: str, session: Session,
                 conversation: Conversation | None = None,
                 settings: AgentSettings | None = None, *, on_event: EventSink | None = None,
                 counter: TokenCounter | None = None, spend: Spend | None = None):
        self.settings = settings = settings or AgentSettings()
        if settings.autonomous and session.toolchain.get(COMPLETE) is None:
            raise ValueError(f"an autonomous agent needs the {COMPLETE} tool in its session")
        self.provider = provider
        self.model = model
        self.session = session
        self.format: CallFormat = get_format(settings.fmt)
        self.conversation = conversation if conversation is not None else Conversation()
        self._emit = on_event or (lambda event: None)
        self.window = (Window(settings.context_window, settings.max_tokens, settings.compaction)
                       if settings.context_window is not None and settings.compaction != "off"
                       else None)
        """Where requests are kept inside the window (None: they are sent as they are)."""
        self._outputs: Path | None = None
        self._system = system_prompt(session, self.format, compact=settings.compact,
                                     autonomous=settings.autonomous)
        self._reminder = REMINDER.format(finish=how_to_finish(self.format))
        spend = spend or Spend(Pricing(model, provider.name, provider.url or None))
        self.billing = Billing(spend, counter or Estimate(), wire_texts,
                               self._reported_in_history())
        folder = self.conversation.folder
        session.serve_agent(  # the files hold what tools printed, not their cut
            output_limit=SAVED_OUTPUT_LIMIT if self.window is not None else 0,
            jobs_folder=None if folder is None else folder / JOBS, deadline=spend.deadline)

    def run(self, prompt: str) -> RunResult:
        """:meth:`send` ``prompt``, and what came of it."""
        first = len(self.conversation.messages)
        return self._result(first, self.send(prompt))

    async def arun(self, prompt: str) -> RunResult:
        """:meth:`run` on the event loop (see :meth:`asend`)."""
        first = len(self.conversation.messages)
        return self._result(first, await self.asend(prompt))

    def _result(self, first: int, outcome: Outcome) -> RunResult:
        added = tuple(self.conversation.messages[first:])
        answer = answer_of(added)
        return RunResult(outcome, "" if answer is None else answer, added)

    def send(self, prompt: str) -> Outcome:
        """Add a user message and work until the model answers without a call (in an
        autonomous run: calls complete), or a limit stops it."""
        self._tell_job_ends()
        self.conversation.append(Message("user", prompt))
        with telemetry.current().turn(self.model):
            return self.resume()

    async def asend(self, prompt: str) -> Outcome:
        """:meth:`send` on the event loop: the same steps, with the model's replies read
        there (asynchronously where the provider can) and tools run in the threads of the
        settings' ``executor``, so one loop holds many sessions. Cancelling it stops the reply
        being read (what it cost is counted) or, once the tool running now has ended, the
        run."""
        self._tell_job_ends()
        self.conversation.append(Message("user", prompt))
        with telemetry.current().turn(self.model):
            outcome = await self._adrive(self._steps())
        if outcome is Outcome.TIME_LIMIT:
            await in_thread(self.session.stop_jobs, self.settings.executor)
        return outcome

    def resume(self) -> Outcome:
        """Continue from the current state (after a resume, or after tool results). A time
        limit ends the background jobs too."""
        outcome = self._work()
        if outcome is Outcome.TIME_LIMIT:
            self.session.stop_jobs()
        return outcome

    def _tell_job_ends(self) -> None:
        """One line for each background job that ended since the model last heard of it."""
        for job in self.session.job_notices():
            self._record(system(job_ended(job), job_ended=job.id, job_state=job.state))

    def _work(self) -> Outcome:
        return self._drive(self._steps())

    def _steps(self) -> Steps:
        """The loop itself, as steps that leave the waiting to a driver (see :class:`_Ask`)."""
        self._answer_unfinished()
        fruitless = 0
        for _ in range(self.settings.max_steps):
            self._tell_job_ends()
            request = yield from self._fitting()
            refused = yield from self._reserving(request)
            if refused is not None:
                return self._stop(refused)
            reply = yield from self._generating(request)
            self.conversation.append(reply.message)
            if reply.limit is not None:
                for call in reply.native:
                    self._record(system(f"Not run: the reply was cut at the {reply.limit.what}.",
                                        Status.INTERRUPTED).tagged(call.call_id, call.name))
                return self._stop(reply.limit)
            if reply.interrupted:
                for call in reply.native:
                    self._record(system("Not run: the user interrupted the reply (Ctrl-C).",
                                        Status.INTERRUPTED).tagged(call.call_id, call.name))
                return Outcome.INTERRUPTED
            calls = reply.calls + reply.native
            if calls:
                self._emit(CallsFound(tuple(calls)))
            ran = yield _Blocking(functools.partial(self._run_calls, reply, calls))
            assert isinstance(ran, _Ran)
            if ran.interrupted:
                return Outcome.INTERRUPTED
            if ran.complete:
                return Outcome.DONE
            told = ran.told or reply.looped is not None
            if reply.looped is not None:
                self._record(system(reply.looped, Status.ERROR, loop=True))
            elif self.settings.feedback_limit > 0 and (said := reply_feedback(
                    reply.message.content, self.format, self.session.toolchain,
                    misses=not (calls or told or reply.cut))) is not None:
                self._record(said)
                told = True
            if reply.cut and reply.looped is None:
                self._record(system(CONTINUE.format(limit=self.settings.max_tokens), cut=True))
                continue
            if calls:
                fruitless = 0
                continue
            if not told:
                if not self.settings.autonomous:
                    return Outcome.DONE
                if self.settings.feedback_limit == 0:  # no reminders: no other next reply
                    return self._give_up(0)
                self._record(system(self._reminder, reminder=True))
            fruitless += 1
            if self.settings.feedback_limit > 0 and fruitless >= self.settings.feedback_limit:
                return self._give_up(fruitless)
        self._emit(StepLimit(self.settings.max_steps))
        self.conversation.append(system(
            f"Stopped after {self.settings.max_steps} steps (the step limit).",
            ending=Outcome.STEP_LIMIT))
        return Outcome.STEP_LIMIT

    def _stop(self, refused: Refusal) -> Outcome:
        """End the run at a limit, saying which, what was spent and what the limit is."""
        ending = Outcome.TIME_LIMIT if refused.kind == "time-limit" else Outcome.BUDGET
        self._record(system(str(refused), ending=ending, limit=refused.kind))
        return ending

    def _run_calls(self, reply: _Reply, calls: list[ToolCall]) -> _Ran:
        """Run a reply's calls in order, recording each result as it comes."""
        ran = _Ran()
        history = tuple(self.conversation.messages)
        for result in self.session.execute_calls(reply.message, calls, reply.diagnostics,
                                                 history):
            self._record(result)
            ran.interrupted = ran.interrupted or result.status is Status.INTERRUPTED
            ran.told = ran.told or "diagnostic" in result.metadata
            ran.complete = ran.complete or completes(result)
        return ran

    def _drive(self, steps: Steps) -> Outcome:
        """Run ``steps`` here, blocking on each wait."""
        value: object = None
        error: Exception | None = None
        with closing(steps):
            while not isinstance(effect := _advance(steps, value, error), Outcome):
                value, error = None, None
                try:
                    if isinstance(effect, _Ask):
                        value = self._generate_once(effect.request)
                    elif isinstance(effect, _Pause):
                        self.settings.sleep(effect.seconds)
                    else:
                        value = effect.work()
                except Exception as err:
                    error = err
        return effect

    async def _adrive(self, steps: Steps) -> Outcome:
        """Run ``steps`` on the event loop: replies are read there (where the provider can
        stream asynchronously), blocking work goes to the threads of the settings'
        ``executor``."""
        value: object = None
        error: Exception | None = None
        with closing(steps):
            while not isinstance(effect := _advance(steps, value, error), Outcome):
                value, error = None, None
                try:
                    if isinstance(effect, _Ask):
                        value = await self._agenerate_once(effect.request)
                    elif isinstance(effect, _Pause):
                        await asyncio.sleep(effect.seconds)
                    else:
                        value = await in_thread(effect.work, self.settings.executor)
                except Exception as err:
                    error = err
        return effect

    def _give_up(self, replies: int) -> Outcome:
        """End the run after ``replies`` fruitless replies in a row (0: a reply of an
        autonomous run that ran nothing, with reminders off), saying why."""
        if not self.settings.autonomous:
            why = (f"{replies} replies in a row held calls that could not run, despite the "
                   "feedback on each.")
        elif replies == 0:
            why = "the reply ran no tool and did not call complete (reminders are off)."
        else:
            why = (f"{replies} replies in a row ran no tool and did not call complete, "
                   "despite the feedback on each.")
        self._record(system(f"Stopped: {why}", ending=Outcome.GAVE_UP))
        return Outcome.GAVE_UP

    def _answer_unfinished(self) -> None:
        """Tell the model of calls whose results were never recorded: fencecall stopped
        (a crash, a kill) while they ran. Every native call id gets its answer, so the next
        request is not refused for a dangling call."""
        messages = self.conversation.messages
        last = next((i for i in range(len(messages) - 1, -1, -1)
                     if messages[i].role == "assistant"), None)
        if last is None or any(m.role == "user" for m in messages[last + 1 :]):
            return
        reply, after = messages[last], messages[last + 1 :]
        answered = {m.call_id for m in after}
        native = [call for call in reply.native_calls if call.id not in answered]
        for call in native:
            self._record(system(UNFINISHED, Status.INTERRUPTED).tagged(call.id, call.name))
        if not after and not native and self._has_calls(reply):
            self._record(system(UNFINISHED, Status.INTERRUPTED))

    def _has_calls(self, reply: Message) -> bool:
        toolchain = self.session.toolchain
        return any(resolve(call, toolchain) is not None
                   for call in parse_calls(reply.content, self.format))

    def _record(self, result: Message) -> None:
        if self.window is not None and (result.tool is not None or result.call is not None):
            result = self._spilled(result, self.window)
        self.conversation.append(result)
        self._emit(ToolResult(result))

    def _spilled(self, result: Message, window: Window) -> Message:
        """``result``, or where it would take more than its share of the window, its start
        and end with the path of a file holding all of it, which the read tool may read."""
        limit = max(int(window.size * self.settings.result_share), 1)
        if self.billing.counter.count(result.content) <= limit:
            return result
        if self._outputs is None:
            self._outputs = outputs_folder(self.conversation.folder)
            self.session.allow_reading(self._outputs)
        return spill(result, self._outputs, limit, self.billing.counter, fmt=self.format)

    def _request(self, history: Sequence[Message] | None = None) -> ChatRequest:
        """The request for the conversation so far (or for ``history``)."""
        fmt = self.format
        tools = tuple(spec.function_schema(fmt) for spec in self.session.toolchain.tools
                      if spec.is_runnable) if fmt.native else ()
        messages = view(self.conversation.messages if history is None else history)
        return ChatRequest(self.model, self._system, messages, tools, self.settings.max_tokens,
                           self.settings.sampling)

    def _fitting(self) -> Generator[_Effect, object, ChatRequest]:
        """The next request, inside the window: when it would not fit, the conversation is
        compacted first (see :mod:`.context`)."""
        request = self._request()
        window = self.window
        if window is None or self.billing.next_input(request) <= window.budget:
            return request
        yield _Blocking(self.compact)  # it asks the model for a summary
        request = self._request()
        needed = self.billing.next_input(request)
        if needed > window.budget:
            fixed = self.billing.next_input(replace(request, messages=request.messages[:0]))
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
        return request

    def compact(self, keep: int | None = None) -> Message | None:
        """Replace the older exchanges of the conversation (all but the task and the latest
        ones that cost at most ``keep`` tokens, by default a third of the budget; at least the
        latest exchange) by the model's summary of them, or, where none can be had
        (``compaction = "drop"``, the model failed), by a note that they were left out. The
        compaction is appended to the log; None where there is nothing to compact."""
        window = self.window or Window(self.settings.context_window or _UNKNOWN,
                                       self.settings.max_tokens)
        request = self._request()
        messages = request.messages
        count = self.billing.counter.count
        costs = [count(text) + MESSAGE_OVERHEAD for text in wire_texts(messages)]
        end = boundary(messages, costs, window.budget // KEEP_SHARE if keep is None else keep)
        if end is None:
            return None
        summary: tuple[str, ReplyRecord] | None = None
        if window.compaction == "summary":
            summary = self._summarize(request, end, window)
        kept = len(messages) - end
        marker = compaction_message(summary[0] if summary else None,
                                    end - head_length(messages), kept)
        if summary is not None:
            marker = replace(marker, reply=summary[1])
        self._record(marker)
        return marker

    def _summarize(self, request: ChatRequest, end: int,
                   window: Window) -> tuple[str, ReplyRecord] | None:
        """The model's summary of ``request``'s messages before ``end``, asked on the same
        prefix (so it reads the prompt cache), and the record of that request; None where
        it cannot be had (it would not fit, a limit refuses it, the model fails)."""
        ask = replace(request, messages=(*request.messages[:end], Message("user",
                                                                          SUMMARY_REQUEST)),
                      max_tokens=window.summary_tokens)
        if window.size != _UNKNOWN and self.billing.next_input(ask) + window.summary_tokens \
                > window.size:
            return None
        if self.billing.refusal(ask, self.settings.max_tokens) is not None:
            return None
        run = telemetry.current().chat(self.model, provider=self.provider.name,
                                       url=self.provider.url)
        text: list[str] = []
        usage: Usage | None = None
        stream = self.provider.stream(_capped(ask, self.billing.spend))
        deadline = self.billing.spend.deadline
        events = stream if deadline is None else Bounded(stream, deadline)
        try:
            for event in events:
                if isinstance(event, TextDelta):
                    text.append(event.text)
                elif isinstance(event, Usage):
                    usage = event
        except ProviderError as err:
            if not isinstance(err, StreamBroken):
                self.billing.refused(run, err)
                return None
            # logged with the next reply, as a broken reply's cost is
            self.billing.charge_lost(ask, usage, "".join(text), run,
                                     error_type=type(err).__name__)
            return None
        except DeadlinePassed:
            self.billing.charge_lost(ask, usage, "".join(text), run, finish_reason="time-limit")
            return None
        finally:
            events.close()
        billed, counted = self.billing.charge(ask, usage, "".join(text), run,
                                              finish_reason="summary")
        summary = "".join(text).strip()
        if not summary:
            self.billing.carry(billed)
            return None
        return summary, ReplyRecord(self.model, self.provider.name, self.provider.url or None,
                                    billed, counted=counted)

    def _generating(self, request: ChatRequest) -> Generator[_Effect, object, _Reply]:
        """One reply, asked for again while its stream breaks off (up to ``retries``, each
        retry within the limits too)."""
        attempt = 0
        while True:
            try:
                reply = yield _Ask(request)
                assert isinstance(reply, _Reply)
                return reply
            except StreamBroken as err:
                attempt += 1
                if attempt > self.settings.retries:
                    raise
                refused = yield from self._reserving(request)
                if refused is not None:
                    raise StreamBroken(f"{err} (not asked again: {refused})") from err
                delay = self.settings.backoff * 2 ** (attempt - 1)
                self._emit(Retrying(str(err), attempt, self.settings.retries, delay))
                yield _Pause(delay)

    def _reserving(self, request: ChatRequest) -> Generator[_Effect, object, Refusal | None]:
        """The billing's refusal of ``request``; in a thread where a shared account may make
        it wait or the counter may ask a server."""
        def refusal() -> Refusal | None:
            return self.billing.refusal(request, self.settings.max_tokens)

        if not self.billing.reserving_waits:
            return refusal()
        refused = yield _Blocking(refusal)
        assert refused is None or isinstance(refused, Refusal)
        return refused

    def _reported_in_history(self) -> tuple[ChatRequest, Usage] | None:
        messages = self.conversation.messages
        for index in range(len(messages) - 1, -1, -1):
            reply = messages[index].reply
            if reply is not None and reply.usage is not None and reply.counted is None \
                    and reply.model == self.model:
                return self._request(messages[:index]), reply.usage
        return None

    def _generate_once(self, request: ChatRequest) -> _Reply:
        """Stream one reply; stop it at its first complete runnable call."""
        reading = self._reading()
        stream = self.provider.stream(_capped(request, self.billing.spend))
        deadline = self.billing.spend.deadline
        events = stream if deadline is None and not self.settings.interruptible else Bounded(
            stream, math.inf if deadline is None else deadline)
        try:
            for event in events:
                if self._take(reading, event):
                    break
        except KeyboardInterrupt:
            reading.stopped_early = reading.interrupted = True
            reading.text.append("\n[interrupted by the user]")
        except DeadlinePassed:
            reading.out_of_time = True
            reading.text.append("\n[cut at the time limit]")
        except Exception as err:
            self._failed(request, reading, err)
            raise
        finally:
            events.close()
        return self._read(request, reading)

    async def _agenerate_once(self, request: ChatRequest) -> _Reply:
        """:meth:`_generate_once` on the event loop (in a thread for a provider that can
        only stream synchronously)."""
        if not has_astream(self.provider):
            return await in_thread(lambda: self._generate_once(request), self.settings.executor)
        reading = self._reading()
        deadline = self.billing.spend.deadline
        limit = asyncio.timeout(None if deadline is None else deadline - time.monotonic())
        capped = _capped(request, self.billing.spend)
        try:
            async with limit, aclosing(self.provider.astream(capped)) as events:
                async for event in events:
                    if self._take(reading, event):
                        break
        except TimeoutError:
            if not limit.expired():
                raise
            reading.out_of_time = True
            reading.text.append("\n[cut at the time limit]")
        except Exception as err:
            if self.billing.charging_waits(reading.usage):
                await in_thread(functools.partial(self._failed, request, reading, err),
                                self.settings.executor)
            else:
                self._failed(request, reading, err)
            raise
        except asyncio.CancelledError as err:  # the run was stopped: the request still cost
            self._failed(request, reading, err)
            raise
        if self.billing.charging_waits(reading.usage):
            return await in_thread(functools.partial(self._read, request, reading),
                                   self.settings.executor)
        return self._read(request, reading)

    def _reading(self) -> _Reading:
        return _Reading(StreamParser(self.format), telemetry.current().chat(
            self.model, provider=self.provider.name, url=self.provider.url))

    def _take(self, reading: _Reading, event: StreamEvent) -> bool:
        """Take one event of the reply; True: stop reading (a complete call, a loop)."""
        if isinstance(event, TextDelta):
            reading.text.append(event.text)
            self._emit(ReplyText(event.text))
            reading.calls = self._first_runnable(reading.parser.feed(event.text))
            if reading.calls:
                reading.stopped_early = True
                return True
            reading.looped = reading.guard.feed(event.text)
            return reading.looped is not None
        if isinstance(event, NativeCall):
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

    def _read(self, request: ChatRequest, reading: _Reading) -> _Reply:
        """The reply of a reading that ended (whole, cut at a call, interrupted, out of
        time), billed."""
        end, stopped_early, looped = reading.end, reading.stopped_early, reading.looped
        interrupted, out_of_time = reading.interrupted, reading.out_of_time
        billed, counted = self.billing.charge(
            request, reading.usage, "".join(reading.text), reading.run,
            finish_reason="time-limit" if out_of_time
            else "tool_call" if stopped_early and not interrupted
            else "loop" if looped else end.stop_reason if end else "interrupted")
        limit = _limit_of(reading, self.billing.spend)
        calls = reading.calls
        if not stopped_early and looped is None and limit is None:
            calls = self._first_runnable(reading.parser.finish())
        reply = "".join(reading.text)
        if limit is not None and not out_of_time:  # noted once billed: the note cost nothing
            reply += f"\n[cut where the {limit.what} ran out]"
        if calls and stopped_early:
            reply = _up_to(reply, calls[0])
        native_calls = [self._native_call(call) for call in reading.native]
        cut = end is not None and end.cut and not stopped_early
        billed, counted = self.billing.with_carried(billed, counted)  # broken attempts
        message = Message("assistant", reply, reply=ReplyRecord(
            self.model, self.provider.name, self.provider.url or None, billed,
            tuple(NativeCallRecord(call.call_id or "", call.name, dict(call.kwargs))
                  for call in native_calls),
            cut, end.stop_reason if cut and end else None, looped, counted))
        self._emit(ReplyDone(message, stopped_early or looped is not None))
        diagnostics = [] if looped is not None else reading.parser.diagnostics
        return _Reply(message, [] if interrupted or limit is not None else calls,
                      diagnostics, interrupted, cut, native_calls,
                      None if looped is None else LOOPED.format(looped), limit)

    def _first_runnable(self, calls: list[ToolCall]) -> list[ToolCall]:
        toolchain = self.session.toolchain
        return [call for call in calls if resolve(call, toolchain) is not None][:1]

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
        spec = self.session.toolchain.get(call.name)
        return ToolCall(spec.name if spec else call.name, kwargs=arguments,
                        call_id=call.call_id, format=self.format.name)


def _capped(request: ChatRequest, spend: Spend) -> ChatRequest:
    """``request`` with the output its budgets leave, where its reply is cut."""
    return replace(request, output_room=spend.output_room())


def _limit_of(reading: _Reading, spend: Spend) -> Refusal | None:
    """The limit that cut ``reading`` as it streamed (the run ends there), or None."""
    if reading.out_of_time:
        refused = spend.over_time()
        assert refused is not None  # the limit has passed
        return refused
    if reading.end is not None and reading.end.stop_reason == CUT_AT_BUDGET:
        return spend.ran_out()
    return None


def answer_of(messages: Sequence[Message]) -> str | None:
    """What a run came to: the summary of the complete call that ended it, else the
    model's last reply (None: no reply)."""
    return next((m.content for m in reversed(messages)
                 if completes(m) or m.role == "assistant"), None)


def _up_to(reply: str, call: ToolCall) -> str:
    """The reply up to the end of its first call: what the model wrote after it (a made-up
    result, more calls) is dropped before it is stored or sent back."""
    if call.end:  # an offset in the text as the parser read it, line ends normalised
        return reply.replace("\r\n", "\n").replace("\r", "\n")[: call.end]
    return reply[: reply.rfind("\n") + 1].rstrip("\n")
