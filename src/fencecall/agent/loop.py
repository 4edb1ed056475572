"""The agent loop: ask the model, read its reply, run the reply's calls, decide what next.

One step of the loop (:meth:`Agent._steps`) builds the next request (compacting the
conversation first where it would not fit the window, :mod:`._context`), reserves it against
the limits, reads the reply (:mod:`._reading`, which stops it at its first complete call),
runs the calls through the session (hooks, confirmation, sandbox) and records their
results, then decides: go on, or end the run. The steps are a generator of waits that a
blocking or an asynchronous driver performs (:mod:`._steps`). Around them a turn fires the
session's prompt hooks (which may keep a prompt from the model) and stop hooks (which may
make a run that ended done go on: :mod:`._turn_hooks`).

An autonomous run (nobody reads the replies) ends done only when the model calls the complete
tool: a reply with no call is no answer there (real replies stop short: ``TH``, a sentence
cut off), so it gets a reminder of how to go on and how to finish, counted as the feedback
on near misses is.

A stream that breaks off (no stop reason, an unreadable event) is never taken for an answer:
the reply is asked for again, with backoff, and reported if it keeps breaking. A reply cut at
the output token limit is kept as cut, and the model is asked to continue it.
"""

from __future__ import annotations

import functools
from collections.abc import Generator, Sequence
from dataclasses import dataclass
from typing import TypeVar

from .. import telemetry
from ..accounting import Billing, Estimate, Pricing, Refusal, Spend, TokenCounter
from ..execution import Session, resolve
from ..message import (
    CannotRun,
    ImageRef,
    JobEnded,
    LimitReached,
    Message,
    Nudge,
    Outcome,
    Status,
    system,
)
from ..parsing import CallFormat, ToolCall, get_format, parse_calls
from ..providers import ChatRequest, Provider, StreamBroken, Usage
from ..providers.base import wire_texts
from ..tools import HookOutcome, HookPoint
from ..tools.builtin.complete import NAME as COMPLETE
from ..tools.builtin.complete import how_to_finish
from ..tools.builtin.jobs import LOG_FOLDER as JOBS
from ..tools.builtin.jobs import ended_notice as job_ended
from ..tools.builtin.jobs import left_notice
from ..tools.hook_points import PROMPT_SUBMIT, RUN_STOP, RunStop, UserPrompt
from ._context import Compactor, view
from ._events import CallsFound, EventSink, Retrying, StepLimit, ToolResult
from ._feedback import reply_feedback
from ._prompt import system_prompt
from ._reading import Reply, ReplyReader
from ._settings import AgentSettings
from ._spill import Spiller
from ._steps import Ask, Blocking, Effect, Pause, Steps, adrive, drive
from ._turn_hooks import STOP_CONTINUES, not_sent, patience_ends, stop_reason
from .conversation import Conversation
from .offload import in_thread
from .stats import jobs_left_running

T = TypeVar("T")
CHECKPOINTS = "checkpoints"
"""The folder of a conversation's that holds its checkpoints."""
SAVED_OUTPUT_LIMIT = 8_000_000
"""Characters of a command's output tools keep where results are saved to files."""
UNFINISHED = ("No result was recorded for this call: fencecall stopped while it was running "
              "(or before it started). It may have run in part; check before repeating it.")
CONTINUE = ("Your reply was cut off at the output token limit ({limit} tokens). Continue "
            "exactly where it stopped; if it was a long file, split the work into parts.")
REMINDER = ("Your reply ran no tool and did not call complete, so the task goes on. Continue "
            "with a tool call. {finish}")


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
class _Ran:
    """What came of a reply's calls."""

    interrupted: bool = False
    told: bool = False
    """A result told the model something went wrong (a diagnostic)."""
    complete: bool = False


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
        self._system = system_prompt(session, self.format, compact=settings.compact,
                                     autonomous=settings.autonomous)
        self._reminder = REMINDER.format(finish=how_to_finish(self.format))
        self.attachments: list[ImageRef] = []
        """Images the next prompt carries (the chat's ``/image``, a path dropped in)."""
        spend = spend or Spend(Pricing(model, provider.name, provider.url or None))
        self.billing = Billing(spend, counter or Estimate(), wire_texts,
                               self._reported_in_history())
        self.reader = ReplyReader(provider, model, self.format, session.toolchain, self.billing,
                                  self._emit, interruptible=settings.interruptible,
                                  executor=settings.executor)
        self.context = Compactor(settings, self.billing, self.reader, self._request,
                                 self._record)
        window, folder = self.context.window, self.conversation.folder
        self._spill = None if window is None else Spiller(
            max(int(window.size * settings.result_share), 1), self.billing.counter, folder,
            session.allow_reading, self.format)
        """Saves the results too big for their share of the window (None: no window)."""
        running = {job.id for job in session.running_jobs()}
        self._left_jobs = [job for job in jobs_left_running(self.conversation.messages)
                           if job not in running]
        """Jobs an earlier run of the conversation left running (stopped as it ended)."""
        session.serve_agent(  # the files hold what tools printed, not their cut
            output_limit=SAVED_OUTPUT_LIMIT if window is not None else 0,
            jobs_folder=None if folder is None else folder / JOBS, deadline=spend.deadline,
            checkpoints=folder / CHECKPOINTS if folder is not None and settings.checkpoints
            else None)

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
        autonomous run: calls complete), or a limit stops it. A prompt hook may keep the
        prompt from the model (:attr:`Outcome.ERROR`), a stop hook make the run go on."""
        self._tell_job_ends()
        with telemetry.current().turn(self.model):
            return self.resume(prompt)

    async def asend(self, prompt: str) -> Outcome:
        """:meth:`send` on the event loop: the same steps, with the model's replies read
        there (asynchronously where the provider can) and tools run in the threads of the
        settings' ``executor``, so one loop holds many sessions. Cancelling it stops the reply
        being read (what it cost is counted) or, once the tool running now has ended, the
        run."""
        self._tell_job_ends()
        try:
            with telemetry.current().turn(self.model):
                outcome = await adrive(self._turn(prompt), self.reader.aread,
                                       self.settings.executor)
        finally:
            self._end_turn()
        if outcome is Outcome.TIME_LIMIT:
            await in_thread(self.session.stop_jobs, self.settings.executor)
        return outcome

    def resume(self, prompt: str | None = None) -> Outcome:
        """Continue from the current state (after a resume, or after tool results), or
        from ``prompt``. A time limit ends the background jobs too."""
        try:
            outcome = drive(self._turn(prompt), self.reader.read, self.settings.sleep)
        finally:
            self._end_turn()
        if outcome is Outcome.TIME_LIMIT:
            self.session.stop_jobs()
        return outcome

    def _end_turn(self) -> None:
        """Record the workspace as the turn left it, where checkpoints are kept: what
        changes after this is the user's (or a job's), which an undo asks before losing."""
        if self.session.checkpoints is not None:
            self.session.checkpoints.end_turn()

    def _tell_job_ends(self) -> None:
        """One line for each background job that ended since the model last heard of it
        (first those an earlier run of the conversation stopped as it ended)."""
        for left in self._left_jobs:
            self._record(system(left_notice(left), note=JobEnded(left, "stopped")))
        self._left_jobs = []
        for job in self.session.job_notices():
            self._record(system(job_ended(job), note=JobEnded(job.id, job.state)))

    def _turn(self, prompt: str | None) -> Steps:
        """``prompt``, unless a prompt hook blocks it (None: the conversation as it is),
        worked on until the run ends and no stop hook makes it go on."""
        if prompt is not None:
            said = yield from self._hooked(PROMPT_SUBMIT, UserPrompt(
                self.session, prompt, self._session_id))
            if said.blocked is not None:
                self._emit(ToolResult(not_sent(said.blocked.reason)))
                return Outcome.ERROR
            images, self.attachments = tuple(self.attachments), []
            self.conversation.append(Message("user", prompt, images=images))
            for note in said.messages:
                self._record(note)
        continued = 0
        while True:
            outcome = yield from self._steps()
            if outcome is Outcome.INTERRUPTED:
                return outcome
            said = yield from self._hooked(RUN_STOP, RunStop(
                self.session, outcome, stop_reason(self.conversation.messages, outcome),
                continued, self._session_id))
            for note in said.messages:
                self._record(note)
            if said.blocked is None or outcome is not Outcome.DONE:
                return outcome
            if continued == STOP_CONTINUES:
                self._record(patience_ends())
                return outcome
            continued += 1
            self.conversation.append(Message("user", said.blocked.reason))

    def _hooked(self, point: HookPoint[T], data: T) -> Generator[Effect, object, HookOutcome]:
        """What the session's hooks of ``point`` say (they may run commands: blocking)."""
        if not self.session.hooks.hooks(point):
            return HookOutcome()
        said = yield Blocking(functools.partial(self.session.hooks.run, point, data))
        assert isinstance(said, HookOutcome)
        return said

    @property
    def _session_id(self) -> str | None:
        """The conversation's name, for hooks (None: it is kept in memory)."""
        return None if self.conversation.path is None else self.conversation.name

    def _steps(self) -> Steps:
        """The loop itself: ask, read the reply, run its calls, decide; each wait is left
        to a driver (see :mod:`._steps`)."""
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
            if (ended := self._cut_short(reply)) is not None:
                return ended
            calls = reply.calls + reply.native
            if calls:
                self._emit(CallsFound(tuple(calls)))
            ran = yield Blocking(functools.partial(self._run_calls, reply, calls))
            assert isinstance(ran, _Ran)
            if ran.interrupted:
                return Outcome.INTERRUPTED
            if ran.complete:
                return Outcome.DONE
            decided = self._decide(reply, bool(calls), self._feedback(reply, calls, ran.told),
                                   fruitless)
            if isinstance(decided, Outcome):
                return decided
            fruitless = decided
        self._emit(StepLimit(self.settings.max_steps))
        self.conversation.append(system(
            f"Stopped after {self.settings.max_steps} steps (the step limit).",
            ending=Outcome.STEP_LIMIT))
        return Outcome.STEP_LIMIT

    def _cut_short(self, reply: Reply) -> Outcome | None:
        """How the run ends where a limit or the user cut the reply short (its native calls
        answered as not run first); None where neither did."""
        if reply.limit is None and not reply.interrupted:
            return None
        why = (f"the reply was cut at the {reply.limit.what}" if reply.limit is not None
               else "the user interrupted the reply (Ctrl-C)")
        for call in reply.native:
            self._record(system(f"Not run: {why}.", Status.INTERRUPTED).tagged(call.call_id,
                                                                              call.name))
        return Outcome.INTERRUPTED if reply.limit is None else self._stop(reply.limit)

    def _feedback(self, reply: Reply, calls: list[ToolCall], told: bool) -> bool:
        """Tell the model what in its reply could not run (a loop, near misses, blocks of
        tools not loaded); whether it was told anything, by this or by a result (``told``)."""
        if reply.looped is not None:
            self._record(system(reply.looped, Status.ERROR, note=Nudge.LOOPED))
            return True
        if self.settings.feedback_limit > 0 and (said := reply_feedback(
                reply.message.content, self.format, self.session.toolchain,
                misses=not (calls or told or reply.cut))) is not None:
            self._record(said)
            return True
        return told

    def _decide(self, reply: Reply, ran: bool, told: bool, fruitless: int) -> Outcome | int:
        """After a reply's calls (``ran``: it had some): how the run ends, or how many replies
        in a row have now been fruitless (``fruitless`` before this one)."""
        if reply.cut and reply.looped is None:
            self._record(system(CONTINUE.format(limit=self.settings.max_tokens),
                                note=Nudge.CONTINUE))
            return fruitless
        if ran:
            return 0
        limit = self.settings.feedback_limit
        if not told:
            if not self.settings.autonomous:
                return Outcome.DONE
            if limit == 0:  # no reminders: no other next reply
                return self._give_up(0)
            self._record(system(self._reminder, note=Nudge.REMINDER))
        fruitless += 1
        return self._give_up(fruitless) if 0 < limit <= fruitless else fruitless

    def _stop(self, refused: Refusal) -> Outcome:
        """End the run at a limit, saying which, what was spent and what the limit is."""
        ending = Outcome.TIME_LIMIT if refused.kind == "time-limit" else Outcome.BUDGET
        self._record(system(str(refused), ending=ending, note=LimitReached(refused.kind)))
        return ending

    def _run_calls(self, reply: Reply, calls: list[ToolCall]) -> _Ran:
        """Run a reply's calls in order, recording each result as it comes."""
        ran = _Ran()
        history = tuple(self.conversation.messages)
        for result in self.session.execute_calls(reply.message, calls, reply.diagnostics,
                                                 history):
            self._record(result)
            ran.interrupted = (ran.interrupted or result.status is Status.INTERRUPTED
                               or result.ending is Outcome.INTERRUPTED)  # a no ending the turn
            ran.told = ran.told or (isinstance(result.note, CannotRun)
                                    and result.note.malformed is not None)
            ran.complete = ran.complete or result.completes
        return ran

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
        if self._spill is not None and (result.tool is not None or result.call is not None):
            result = self._spill(result)
        self.conversation.append(result)
        self._emit(ToolResult(result))

    def _request(self, history: Sequence[Message] | None = None) -> ChatRequest:
        """The request for the conversation so far (or for ``history``)."""
        fmt = self.format
        tools = tuple(spec.function_schema(fmt) for spec in self.session.toolchain.tools
                      if spec.is_runnable) if fmt.native else ()
        messages = view(self.conversation.messages if history is None else history)
        return ChatRequest(self.model, self._system, messages, tools, self.settings.max_tokens,
                           self.settings.sampling, vision=self.settings.vision)

    def _fitting(self) -> Generator[Effect, object, ChatRequest]:
        """The next request, inside the window: when it would not fit, the conversation is
        compacted first (see :mod:`._context`)."""
        request = self._request()
        if self.context.fits(request):
            return request
        yield Blocking(self.context.compact)  # it asks the model for a summary
        request = self._request()
        self.context.check_fits(request)
        return request

    def compact(self, keep: int | None = None) -> Message | None:
        """Compact the conversation now (see :meth:`._context.Compactor.compact`)."""
        return self.context.compact(keep)

    def _generating(self, request: ChatRequest) -> Generator[Effect, object, Reply]:
        """One reply, asked for again while its stream breaks off (up to ``retries``, each
        retry within the limits too)."""
        attempt = 0
        while True:
            try:
                reply = yield Ask(request)
                assert isinstance(reply, Reply)
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
                yield Pause(delay)

    def _reserving(self, request: ChatRequest) -> Generator[Effect, object, Refusal | None]:
        """The billing's refusal of ``request``; in a thread where a shared account may make
        it wait or the counter may ask a server."""
        def refusal() -> Refusal | None:
            return self.billing.refusal(request, self.settings.max_tokens)

        if not self.billing.reserving_waits:
            return refusal()
        refused = yield Blocking(refusal)
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

def answer_of(messages: Sequence[Message]) -> str | None:
    """What a run came to: the summary of the complete call that ended it, else the
    model's last reply (None: no reply)."""
    return next((m.content for m in reversed(messages)
                 if m.completes or m.role == "assistant"), None)
