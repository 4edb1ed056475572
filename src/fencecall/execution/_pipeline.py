"""The one path every tool call takes, whoever parsed it.

:func:`execute_calls` takes calls already parsed (from a whole text, a stream, or a
provider's native calls) and runs them in order:

    message pre hooks (may block) → for each call: resolve → bind arguments → tool pre hooks
    (may block, or allow the call without confirmation) → confirmation → the tool (timed) →
    tool post hooks → message post hooks

Every failure on the way, an exception in a tool included, becomes a ``system`` message with
a :class:`~fencecall.message.Status` (so does a call of a known tool this run did not load,
in its place: see :mod:`.unloaded`); a :class:`~fencecall.tools.ToolError` becomes its
message. An interrupt (Ctrl-C) stops the call and the ones after it, and each of those is
answered too, so no call id goes without a result. So does a "no" that ends the turn (a
:class:`~fencecall.tools.Decline`): its result carries the ending
(:attr:`~fencecall.message.Outcome.INTERRUPTED`) that stops the run, so the user says what to
do instead before the model is asked again.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from typing import Protocol

from .. import telemetry
from ..errors import ToolError
from ..message import (
    CallRecord,
    CannotRun,
    Completion,
    Message,
    Outcome,
    Status,
    safe_text,
    system,
)
from ..parsing import Diagnostic, ToolCall
from ..tools import Decline, Toolchain, ToolContext, ToolInvocation, ToolSpec
from ..tools.hook_points import (
    MESSAGE_POST_PROCESS,
    MESSAGE_PRE_PROCESS,
    TOOL_POST_EXECUTE,
    TOOL_PRE_EXECUTE,
    MessagePostProcess,
    MessagePreProcess,
    ToolPostExecute,
    ToolPreExecute,
)
from ..tools.spec import ExecuteResult
from ..tools.tool_context import Answer
from .unloaded import line_of, not_loaded, notice


class CallRunner(ToolContext, Protocol):
    """What the pipeline needs: a tool context that also holds the loaded tools and knows
    which secrets to take out of results."""

    @property
    def toolchain(self) -> Toolchain: ...

    def redact(self, text: str) -> str:
        """``text`` with every known secret value replaced."""
        ...


@dataclass(frozen=True, slots=True)
class ToolUse:
    """A call resolved against a toolchain: ``spec`` is None for a named call to a tool
    that does not exist (the model is told so)."""

    call: ToolCall
    spec: ToolSpec | None

    @property
    def tool(self) -> str:
        """The tool's name (``py`` blocks resolve to ``ipython``), or the unknown name."""
        return self.spec.name if self.spec is not None else self.call.name


def resolve(call: ToolCall, toolchain: Toolchain) -> ToolUse | None:
    """The use a call makes, or None when there is nothing to run or answer: a code block
    whose langtag names no tool is plain code, and one naming an informational tool is an
    example of it. A named call (XML, JSON, a native call) is always answered, even when its
    tool does not exist or cannot run."""
    if call.is_codeblock:
        spec = toolchain.for_langtag(call.name)
        if spec is None or not spec.is_runnable:
            return None
        return ToolUse(call, spec)
    return ToolUse(call, toolchain.get(call.name))


def execute_calls(session: CallRunner, message: Message, calls: Iterable[ToolCall],
                  diagnostics: Iterable[Diagnostic] = (),
                  history: Sequence[Message] = ()) -> Iterator[Message]:
    """Run ``calls``, which ``message`` made, through hooks and confirmation, in order.

    ``diagnostics`` (what the parser found meant as a call but unable to run) are said to the
    model in their place among the results, and so are code blocks of known tools this run
    did not load. ``history`` is the conversation so far, handed to pre-execute hooks (empty
    for a reply run on its own). Every message that comes out, hook notes included, has known
    secrets redacted before anyone shows, logs or sends it, and is made encodable
    (:func:`~fencecall.message.safe_text`: a tool's or an MCP server's lone surrogate becomes
    U+FFFD, and a line after the text says so).
    """
    for result in _execute_calls(session, message, calls, diagnostics, tuple(history)):
        yield replace(result, content=safe_text(session.redact(result.content)))


def _execute_calls(session: CallRunner, message: Message, calls: Iterable[ToolCall],
                   diagnostics: Iterable[Diagnostic],
                   history: tuple[Message, ...]) -> Iterator[Message]:
    calls = list(calls)
    uses = [use for call in calls if (use := resolve(call, session.toolchain)) is not None]
    ran = {use.call.start for use in uses if use.call.is_codeblock}
    told = [_diagnostic_message(d) for d in diagnostics
            if _concerns_a_tool(d, session) and not (d.kind == "swallowed" and d.start in ran)]
    notes = sorted([*told, *_unloaded_answers(calls, message, session.toolchain)],
                   key=lambda note: note[0])
    pre = session.hooks.run(MESSAGE_PRE_PROCESS, MessagePreProcess(session, message))
    yield from pre.messages
    results: list[Message] = []
    if pre.blocked is not None:
        skipped = _answer_each(uses, f"The message's tool calls were not run: "
                               f"{pre.blocked.reason}", Status.BLOCKED)
        results += skipped + [note for _, note in notes]
        yield from skipped
        yield from (note for _, note in notes)
    for index, use in enumerate(uses if pre.blocked is None else ()):
        while notes and notes[0][0] < use.call.start:
            results.append(notes.pop(0)[1])
            yield results[-1]
        stopped: tuple[str, Status] | None = None
        for result in _execute(session, use, history):
            results.append(result)
            stopped = stopped or _stops(result)
            yield result
        if stopped is not None:
            skipped = _answer_each(uses[index + 1 :], *stopped)
            results += skipped
            yield from skipped
            break
    if pre.blocked is None:
        results += [note for _, note in notes]
        yield from (note for _, note in notes)
    post = session.hooks.run(MESSAGE_POST_PROCESS,
                             MessagePostProcess(session, message, tuple(results)))
    yield from post.messages


def _stops(result: Message) -> tuple[str, Status] | None:
    """What the calls after ``result`` are answered, where it stops them: an interrupt, or
    a no that ends the turn."""
    if result.status is Status.INTERRUPTED:
        return "Not run: an earlier call was interrupted by the user.", Status.INTERRUPTED
    if result.ending is Outcome.INTERRUPTED:
        return ("Not run: the user declined an earlier call and ended the turn.",
                Status.DECLINED)
    return None


def _concerns_a_tool(diagnostic: Diagnostic, session: CallRunner) -> bool:
    """An unclosed code block matters only if its langtag names a tool; the rest always do.
    (A block inside another that ran went to that tool as its text: see ``ran`` above.)"""
    if not diagnostic.codeblock or diagnostic.name is None:
        return True
    return resolve(ToolCall(diagnostic.name), session.toolchain) is not None


def _diagnostic_message(diagnostic: Diagnostic) -> tuple[int, Message]:
    return diagnostic.start, system(diagnostic.message, Status.ERROR,
                                    note=CannotRun(malformed=diagnostic.kind))


def _unloaded_answers(calls: list[ToolCall], message: Message,
                      toolchain: Toolchain) -> Iterator[tuple[int, Message]]:
    """An answer to each code block that calls a tool not loaded here, for its place among
    the results (a named call of one is answered as it runs: see :func:`_results`)."""
    for call in calls:
        if call.is_codeblock and (spec := not_loaded(call, toolchain)) is not None:
            answer = system(notice([(call, spec)], message.content, toolchain), Status.ERROR,
                            note=CannotRun(unloaded=(spec.name,),
                                           line=line_of(call, message.content)))
            yield call.start, _recorded(answer.tagged(call.call_id, spec.name))


def _answer_each(uses: list[ToolUse], text: str, status: Status) -> list[Message]:
    """One result per call that will not run; a single one when no call has an id."""
    if not uses:
        return []
    with_ids = [use for use in uses if use.call.call_id is not None]
    if not with_ids:
        note = system(text, status)
        return [_recorded(note)]
    answers = [system(text, status).tagged(use.call.call_id, use.tool) for use in with_ids]
    return [_recorded(answer) for answer in answers]


def _execute(session: CallRunner, use: ToolUse, history: tuple[Message, ...]) -> Iterator[Message]:
    """Run one call; its results are tagged with its call id and tool, and its last result
    carries the call's record: how long it took, how it ended and, if it failed, why
    (each message is held back until the next, so the last can be known)."""
    started = time.monotonic()
    recorder = telemetry.current()
    content = recorder.records_content
    run = recorder.tool(
        use.tool, call_id=use.call.call_id, description=use.spec.desc if use.spec else "",
        fmt=use.call.format, langtag=use.call.name if use.call.is_codeblock else None,
        arguments=session.redact(_written(use.call)) if content else None)
    held: Message | None = None
    failure: tuple[int, Message] | None = None
    seen = _Seen()
    record = CallRecord(use.tool, Status.INTERRUPTED, 0.0, "GeneratorExit")
    try:
        for index, message in enumerate(_results(session, use, history, seen)):
            if held is not None:
                yield held
            held = message.tagged(use.call.call_id, use.tool)
            if failure is None and held.failed:
                failure = index, held
        record = CallRecord(use.tool, None, 0.0)
        if held is not None:
            error_type = seen.raised if failure and failure[0] == seen.at else None
            record = call_record(held, time.monotonic() - started - sum(seen.asked),
                                 failure and failure[1], error_type)
            ends = use.spec is not None and use.spec.ends_run and failure is None
            yield replace(held, call=record, note=Completion() if ends else held.note)
    finally:  # also when the caller stops early: the span covers what really ran
        result = session.redact(held.content) if content and held is not None else None
        run.end(record.outcome, record.error_type, result)


def _written(call: ToolCall) -> str:
    """A call's arguments as written, for telemetry that records content."""
    if call.kwargs:
        return json.dumps(dict(call.kwargs), ensure_ascii=False, default=str)
    return f"{call.argline}\n{call.content}" if call.argline else call.content


def _recorded(result: Message) -> Message:
    """A result that stands for a whole call that never ran, with its record."""
    return replace(result, call=call_record(result, 0.0))


@dataclass(slots=True)
class _Seen:
    """What the record of a call needs from its run: the name of the exception a tool
    raised and which of the call's results reports it, and the seconds its confirmations
    waited for an answer (not the tool's time)."""

    raised: str | None = None
    at: int | None = None
    asked: list[float] = field(default_factory=list)


def call_record(last: Message, duration: float, failure: Message | None = None,
                error_type: str | None = None) -> CallRecord:
    """What the log keeps of a call whose last result is ``last``: how long it took, how it
    ended (``ok`` or the status of its first failed result, ``failure``) and, for failures,
    a low-cardinality ``error_type`` (the name of the exception it reports, else the
    status)."""
    decisive = failure or last
    status = decisive.status
    return CallRecord(
        last.tool or "(unknown)", status, round(duration, 4),
        None if status is None else error_type or status.value, last.exit_code)


def _results(session: CallRunner, use: ToolUse, history: tuple[Message, ...],
             seen: _Seen) -> Iterator[Message]:
    spec = use.spec
    if spec is None and (missing := not_loaded(use.call, session.toolchain)) is not None:
        yield system(notice([(use.call, missing)], "", session.toolchain), Status.ERROR,
                     note=CannotRun(unloaded=(missing.name,)))
        return
    if spec is None:
        known = ", ".join(session.toolchain.names()) or "none"
        yield system(f"Unknown tool {use.call.name!r}. Available tools: {known}.", Status.ERROR)
        return
    if not spec.is_runnable:
        yield system(f"{spec.name} only describes something to you; it cannot be called.",
                     Status.ERROR)
        return
    try:
        kwargs = spec.bind(use.call.argline, use.call.content, use.call.kwargs)
    except ToolError as err:
        yield system(f"Invalid call: {err}", Status.ERROR)
        return
    invocation = ToolInvocation(use.call, spec, kwargs, session, seen.asked)
    results: list[Message] = []
    started = time.monotonic()
    error: BaseException | None = None
    try:
        for message in _run(invocation, history):
            results.append(message)
            yield message
    except KeyboardInterrupt as err:
        error = err
        message = system(f"Interrupted: the {spec.name} call was stopped by the user (Ctrl-C).",
                         Status.INTERRUPTED)
        results.append(message)
        yield message
    except ToolError as err:
        error = err
        message = system(str(err), Status.ERROR)
        results.append(message)
        yield message
    except Exception as err:
        error = err
        message = system(f"Error while running {spec.name}: {type(err).__name__}: {err}",
                         Status.ERROR)
        seen.raised, seen.at = type(err).__name__, len(results)
        results.append(message)
        yield message
    post = session.hooks.run(TOOL_POST_EXECUTE, ToolPostExecute(
        invocation, tuple(results), time.monotonic() - started - sum(seen.asked), error))
    yield from post.messages


def _run(invocation: ToolInvocation, history: tuple[Message, ...]) -> Iterator[Message]:
    """Pre hooks, confirmation (unless a pre hook allowed the call, or every call is approved:
    then neither the tool's rule nor its preview is worked out), then the tool itself."""
    spec, context = invocation.spec, invocation.context
    pre = context.hooks.run(TOOL_PRE_EXECUTE, ToolPreExecute(invocation, history))
    yield from pre.messages
    if pre.blocked is not None:
        yield system(f"The {spec.name} call was blocked: {pre.blocked.reason}", Status.BLOCKED)
        return
    if pre.allowed is None and not context.approves_every_call \
            and _needs_confirmation(invocation):
        preview = spec.preview(invocation) if spec.preview else None
        answer = invocation.confirm(f"Run {spec.name}?", preview)
        if not answer:
            yield declined(spec.name, answer)
            return
    assert spec.execute is not None
    yield from _messages(spec.execute(invocation))


def declined(tool: str, answer: Answer) -> Message:
    """The result of a call the user said no to: what they want the model told and, where
    the no ends the turn, the ending that stops the run until they say what to do instead."""
    if not isinstance(answer, Decline):
        return system(f"The {tool} call was not confirmed, so it did not run.", Status.DECLINED)
    text = f"The user declined the {tool} call, so it did not run."
    if answer.reason:
        text += f" They said: {answer.reason}"
    if answer.ends_turn:
        text += " The turn ends here: they will say what to do instead."
    return system(text, Status.DECLINED,
                  ending=Outcome.INTERRUPTED if answer.ends_turn else None)


def _needs_confirmation(invocation: ToolInvocation) -> bool:
    rule = invocation.spec.confirm
    return bool(rule(invocation)) if callable(rule) else rule


def _messages(result: ExecuteResult) -> Iterator[Message]:
    if result is None:
        return
    items: Iterable[Message | str] = [result] if isinstance(result, Message | str) else result
    for item in items:
        yield item if isinstance(item, Message) else system(item)
