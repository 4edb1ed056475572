"""Conversation messages and the typed records layers hand each other through them.

A tool result carries its call's :class:`CallRecord`, a model's reply its :class:`ReplyRecord`
(model, usage, native calls), the message that ends a run its :class:`Outcome`, and what a
message is to the loop (a reminder, a compaction, the completion…) its :data:`Note`. The log
keeps them in the message's ``metadata`` object under the keys it always used (see
:mod:`fencecall.agent.conversation`); in memory they are fields, so no layer reads another's
string keys. ``metadata`` holds only what a tool or hook adds of its own.

Text from outside (a model's reply, a tool's result) is made encodable where it comes in
(:class:`Unencodable`, :func:`safe_text`), so no message holds what UTF-8 cannot.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]


class Status(StrEnum):
    """How a tool call ended when it did not simply succeed."""

    ERROR = "error"
    """The tool failed, or the call could not be understood."""
    BLOCKED = "blocked"
    """A hook stopped it."""
    DECLINED = "declined"
    """The user did not confirm it."""
    INTERRUPTED = "interrupted"
    """The user stopped it (Ctrl-C), or an earlier interrupt kept it from starting."""


FAILED_STATUSES = frozenset({Status.ERROR, Status.BLOCKED, Status.DECLINED, Status.INTERRUPTED})


class Outcome(StrEnum):
    """How a run ended: the agent loop's answer, a batch task's status, the exit status.
    (How one call ended is a :class:`Status`.)"""

    DONE = "done"
    """The model answered: a reply without a call where someone reads the replies, a call
    of the complete tool in an autonomous run."""
    STEP_LIMIT = "step-limit"
    GAVE_UP = "gave-up"
    """Reply after reply held calls that could not run (near misses, malformed calls) or
    looped, despite the feedback on each."""
    INTERRUPTED = "interrupted"
    """The user stopped a reply or a call (Ctrl-C), or said no to a call and so ended the
    turn (to say what to do instead)."""
    ERROR = "error"
    """The run could not go on: the model's server failed, the task could not start."""
    TIMEOUT = "timeout"
    """A batch task ran past its time limit."""
    STOPPED = "stopped"
    """A batch task was stopped with its batch."""
    BUDGET = "budget"
    """The next request could have spent more than the USD or token budget left."""
    TIME_LIMIT = "time-limit"
    """The run's wall-clock limit passed."""

    @property
    def exit_code(self) -> int:
        """The command's exit status for a run that ended so, for a script to branch on: 0
        done, 1 an error (the model's server failed), 3 to 5 a limit (3 a budget, 4 the time
        limit, 5 the step limit), 6 the agent gave up, 130 Ctrl-C (the shell's); 2 is a usage
        or configuration error, before any run."""
        return _EXIT_CODES.get(self, 1)


_EXIT_CODES = {Outcome.DONE: 0, Outcome.BUDGET: 3, Outcome.TIME_LIMIT: 4,
               Outcome.STEP_LIMIT: 5, Outcome.GAVE_UP: 6, Outcome.INTERRUPTED: 130}


@dataclass(frozen=True, slots=True)
class Usage:
    """The tokens one reply cost, as the provider counted them (cache reads and writes are
    part of the input, counted apart because they are priced apart)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0

    @property
    def all_input(self) -> int:
        """Every input token, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(self.input_tokens + other.input_tokens,
                     self.output_tokens + other.output_tokens,
                     self.cache_read_tokens + other.cache_read_tokens,
                     self.cache_write_tokens + other.cache_write_tokens)

    def as_dict(self) -> dict[str, int]:
        return {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens,
                "cache_read_tokens": self.cache_read_tokens,
                "cache_write_tokens": self.cache_write_tokens}


@dataclass(frozen=True, slots=True)
class NativeCallRecord:
    """A native function call a reply made, as the chat API must be shown it again."""

    id: str
    name: str
    arguments: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class TokenLogprob:
    """One generated token as the server scored it (``--logprobs``): kept for training and
    for judging how sure the model was; ``token_id`` where the server gives it."""

    token: str
    logprob: float
    token_id: int | None = None


@dataclass(frozen=True, slots=True)
class ReplyRecord:
    """What the loop knows of one model reply beyond its text."""

    model: str
    provider: str
    provider_url: str | None = None
    usage: Usage | None = None
    """None where the provider reported none (a reply cut at its first call)."""
    native_calls: tuple[NativeCallRecord, ...] = ()
    cut: bool = False
    """The reply reached the output token limit; ``stop_reason`` says the provider's word."""
    stop_reason: str | None = None
    loop: str | None = None
    """What the reply kept repeating, when it was cut for looping."""
    counted: Literal["tokenizer", "estimate"] | None = None
    """Where the provider reported no usage (a reply cut at its first call, a broken
    stream), fencecall counted it: with the model's tokenizer, or as an estimate that errs
    high. None: ``usage`` is the provider's own."""
    logprobs: tuple[TokenLogprob, ...] | None = None
    """The reply's tokens and their log probabilities, as far as the reply was kept (a reply
    cut at its first call keeps the tokens that cover its text); None where none were asked
    for or given."""


@dataclass(frozen=True, slots=True)
class CallRecord:
    """How one tool call went: kept on its last result."""

    tool: str
    status: Status | None
    """How the call ended where it did not simply succeed (None: it did)."""
    duration_s: float
    error_type: str | None = None
    """For a failure, a low-cardinality cause: an exception's name, else the status."""
    exit_code: int | None = None

    @property
    def ok(self) -> bool:
        return self.status is None

    @property
    def outcome(self) -> str:
        """``ok`` or the status, as logs, telemetry and batch results write it."""
        return "ok" if self.status is None else self.status.value


class Nudge(StrEnum):
    """What the loop tells the model between replies where no tool result speaks."""

    REMINDER = "reminder"
    """An autonomous run's reply ran no tool and did not call complete."""
    LOOPED = "loop"
    """The reply kept repeating itself and was cut."""
    CONTINUE = "cut"
    """The reply reached the output token limit: go on where it stopped."""


@dataclass(frozen=True, slots=True)
class CannotRun:
    """Calls of a reply that could not run as written, so the model is told why:
    ``malformed`` (the parser's diagnostic kind), ``near_misses`` (the kinds of blocks meant
    as calls), ``unloaded`` (tools known but not loaded in this run), at ``line``."""

    malformed: str | None = None
    near_misses: tuple[str, ...] = ()
    unloaded: tuple[str, ...] = ()
    line: int | None = None


@dataclass(frozen=True, slots=True)
class LimitReached:
    """A limit ended the run; ``kind`` names it (``time-limit``, ``budget-usd``…)."""

    kind: str


@dataclass(frozen=True, slots=True)
class JobEnded:
    """A background job ended since the model last heard of it."""

    job: int
    state: str


@dataclass(frozen=True, slots=True)
class Compacted:
    """The older exchanges were replaced by this message (a summary, or a note that they
    were left out, ``mode``); the ``kept`` messages before it stay verbatim."""

    kept: int
    replaced: int
    mode: Literal["summary", "drop"]


@dataclass(frozen=True, slots=True)
class Completion:
    """The result of a call of a tool that ends the run (complete): its text is the answer.
    Only the pipeline marks a result so, for a tool whose spec says it ends the run."""


Note = Nudge | CannotRun | LimitReached | JobEnded | Compacted | Completion
"""What a message is to the loop, beyond a reply or a plain tool result."""


@dataclass(frozen=True, slots=True)
class ImageRef:
    """An image a message shows the model, by reference: the file is kept in the
    conversation's folder (see :mod:`fencecall.images`), so the log stays text."""

    path: str
    media_type: str
    width: int
    height: int
    size: int
    """Bytes of the kept file."""
    source: str = ""
    """Where it came from (the path the user or the read tool gave), for notes."""


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Message:
    """One message. Tool results are ``system`` messages tagged with the call's ``call_id``
    and ``tool``."""

    role: Role
    content: str
    call_id: str | None = None
    timestamp: datetime = field(default_factory=_now)
    metadata: Mapping[str, Any] = field(default_factory=dict)
    tool: str | None = None
    status: Status | None = None
    """The call's status, if it did not simply succeed."""
    exit_code: int | None = None
    """A command's exit status, as the tool that ran it reported it."""
    call: CallRecord | None = None
    reply: ReplyRecord | None = None
    ending: Outcome | None = None
    """On the message that says why a run stopped short (a limit, giving up, a call the user
    declined and so ended the turn)."""
    note: Note | None = None
    """What the message is to the loop (see :data:`Note`), set by the layer that knows."""
    images: tuple[ImageRef, ...] = ()
    """Images shown with the text (a user's attachment, an image the read tool read)."""

    def tagged(self, call_id: str | None, tool: str) -> Message:
        """This message as the result of call ``call_id`` of ``tool``."""
        return replace(self, call_id=call_id if call_id is not None else self.call_id,
                       tool=tool)

    @property
    def failed(self) -> bool:
        """Whether this tool result reports a call that did not do its job."""
        return self.status in FAILED_STATUSES

    @property
    def completes(self) -> bool:
        """Whether this is the result that ended the run done (see :class:`Completion`)."""
        return isinstance(self.note, Completion)

    @property
    def native_calls(self) -> tuple[NativeCallRecord, ...]:
        return self.reply.native_calls if self.reply is not None else ()


def system(content: str, status: Status | None = None, *, tool: str | None = None,
           exit_code: int | None = None, ending: Outcome | None = None,
           note: Note | None = None, images: tuple[ImageRef, ...] = (),
           **metadata: Any) -> Message:
    """A system message, the form every tool result and error takes."""
    return Message("system", content, metadata=metadata, tool=tool, status=status,
                   exit_code=exit_code, ending=ending, note=note, images=images)


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F][0-9a-fA-F]{2}")
"""A JSON escape of a surrogate (``\\ud83d``): of a pair, or of a lone one."""
_NAMED = 5
"""How many of the replaced characters a note names (the rest it counts)."""


@dataclass(slots=True)
class Unencodable:
    """Takes lone surrogates out of text where it comes in: a JSON ``"\\ud800"`` from a model,
    a tool or an MCP server decodes to one, and no UTF-8 holds it, so a message keeping it
    could not be logged, sent or shown, and would end the session. Each becomes U+FFFD
    (:meth:`clean`, as many pieces of one text as it takes), and :meth:`note` says which
    code points were there, for the text the model and the user read."""

    replaced: list[int] = field(default_factory=list)

    def clean(self, text: str) -> str:
        """``text`` with each lone surrogate replaced by U+FFFD (remembered for the note)."""
        if _LONE_SURROGATE.search(text) is None:
            return text
        self.replaced += map(ord, _LONE_SURROGATE.findall(text))
        return _LONE_SURROGATE.sub("\ufffd", text)

    def clean_json(self, text: str) -> str:
        """JSON ``text`` (a native call's arguments) that decodes to no lone surrogate: one
        with surrogate escapes is decoded, cleaned and written again (pairs come back as the
        characters they make); text that is not JSON is only :meth:`clean`-ed."""
        if SURROGATE_ESCAPE.search(text) is None:
            return self.clean(text)
        try:
            value = json.loads(text, strict=False)
        except ValueError:
            return self.clean(text)
        return json.dumps(self._clean_value(value), ensure_ascii=False)

    def _clean_value(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.clean(value)
        if isinstance(value, list):
            return [self._clean_value(item) for item in value]
        if isinstance(value, dict):
            return {self.clean(key): self._clean_value(item) for key, item in value.items()}
        return value

    def note(self) -> str | None:
        """``[1 character that could not be encoded (U+D800) was replaced with U+FFFD]``,
        or None when nothing was."""
        count = len(self.replaced)
        if not count:
            return None
        codes = list(dict.fromkeys(f"U+{code:04X}" for code in self.replaced))
        named = ", ".join(codes[:_NAMED]) + (", …" if len(codes) > _NAMED else "")
        return (f"[{count} character{'s' * (count > 1)} that could not be encoded ({named}) "
                f"{'were' if count > 1 else 'was'} replaced with U+FFFD]")


def safe_text(text: str) -> str:
    """``text`` that can be encoded: its lone surrogates replaced by U+FFFD and, on a line
    after it, the note saying which were (see :class:`Unencodable`); ``text`` itself when it
    holds none."""
    unencodable = Unencodable()
    cleaned = unencodable.clean(text)
    note = unencodable.note()
    return cleaned if note is None else f"{cleaned}\n{note}"
