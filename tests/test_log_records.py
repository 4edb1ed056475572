"""A message's typed records survive the log's JSON, and a log's bad values do not become
records."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fencecall.log_records import from_record, to_record
from fencecall.message import (
    CallRecord,
    CannotRun,
    Compacted,
    Completion,
    JobEnded,
    LimitReached,
    Message,
    NativeCallRecord,
    Nudge,
    Outcome,
    ReplyRecord,
    Status,
    TokenLogprob,
    Usage,
)

words = st.text(min_size=1, max_size=12)
counts = st.integers(min_value=0, max_value=10**9)
plain_metadata = st.dictionaries(st.sampled_from(["timed_out", "note", "hint"]),
                                 st.booleans() | words, max_size=2)
times = st.datetimes(timezones=st.just(UTC))
names = st.tuples(words) | st.tuples(words, words)
notes = st.one_of(
    st.sampled_from(Nudge), st.just(Completion()), st.builds(LimitReached, words),
    st.builds(JobEnded, st.integers(1, 99), words),
    st.builds(Compacted, st.integers(0, 99), st.integers(0, 99),
              st.sampled_from(["summary", "drop"])),
    st.builds(CannotRun, words, st.just(()) | names, st.just(()) | names,
              st.none() | st.integers(1, 99)),
    st.builds(CannotRun, st.none(), names, st.just(()) | names,
              st.none() | st.integers(1, 99)),
    st.builds(CannotRun, st.none(), st.just(()), names, st.none() | st.integers(1, 99)))
"""Every kind of note, each as the log can hold it (a CannotRun says at least one thing)."""


@st.composite
def results(draw: st.DrawFn) -> Message:
    tool = draw(st.none() | words)
    exit_code = draw(st.none() | st.integers(-255, 255))
    call = None
    if tool is not None and draw(st.booleans()):
        status = draw(st.none() | st.sampled_from(Status))
        call = CallRecord(tool, status, draw(st.floats(0, 1e4)),
                          None if status is None else draw(st.none() | words), exit_code)
    return Message("system", draw(st.text()), draw(st.none() | words), draw(times),
                   draw(plain_metadata), tool=tool,
                   status=draw(st.none() | st.sampled_from(Status)), exit_code=exit_code,
                   call=call, ending=draw(st.none() | st.sampled_from(Outcome)),
                   note=draw(st.none() | notes))


scored = st.lists(st.builds(TokenLogprob, st.text(max_size=4),
                           st.floats(max_value=0, allow_nan=False),
                           st.none() | st.integers(0, 200_000)), max_size=4).map(tuple)


@st.composite
def replies(draw: st.DrawFn) -> Message:
    native = tuple(NativeCallRecord(draw(words), draw(words),
                                    draw(st.dictionaries(words, st.integers() | words,
                                                         max_size=3)))
                   for _ in range(draw(st.integers(0, 2))))
    cut = draw(st.booleans())
    usage = draw(st.none() | st.builds(Usage, counts, counts, counts, counts))
    reply = ReplyRecord(draw(words), draw(words), draw(st.none() | words), usage,
                        native, cut, draw(st.none() | words) if cut else None,
                        draw(st.none() | words),
                        draw(st.sampled_from([None, "tokenizer", "estimate"])) if usage
                        else None, draw(st.none() | scored))
    return Message("assistant", draw(st.text()), None, draw(times), draw(plain_metadata),
                   reply=draw(st.none() | st.just(reply)))


@given(st.one_of(results(), replies(),
                 st.builds(Message, st.just("user"), st.text(), timestamp=times)))
def test_every_typed_part_survives_the_log(message: Message) -> None:
    assert from_record(json.loads(json.dumps(to_record(message)))) == message


def _loaded(role: str, metadata: dict[str, Any]) -> Message | None:
    return from_record({"op": "message", "role": role, "content": "x",
                        "time": datetime.now(UTC).isoformat(), "metadata": metadata})


def test_values_of_the_wrong_type_are_left_out() -> None:
    result = _loaded("system", {"tool": "shell", "exit_code": "0", "outcome": "ok",
                                "duration_s": "slow", "status": "exploded"})
    assert result is not None
    assert result.exit_code is None and result.status is None
    assert result.call == CallRecord("shell", None, 0.0)
    reply = _loaded("assistant", {"model": "m", "usage": {"input_tokens": -3}})
    assert reply is not None and reply.reply is not None and reply.reply.usage is None


def test_logprobs_of_the_wrong_shape_are_left_out_and_old_logs_have_none() -> None:
    for bad in ("x", [{"token": "a"}], [{"token": "a", "logprob": "low"}],
                [{"token": "a", "logprob": -1.0, "id": "7"}]):
        reply = _loaded("assistant", {"model": "m", "logprobs": bad})
        assert reply is not None and reply.reply is not None, bad
        assert reply.reply.logprobs is None and "logprobs" not in reply.metadata, bad
    old = _loaded("assistant", {"model": "m"})
    assert old is not None and old.reply is not None and old.reply.logprobs is None
    good = _loaded("assistant", {"model": "m", "logprobs": [
        {"token": "a", "logprob": -0.5, "id": 7}, {"token": "b", "logprob": 0}]})
    assert good is not None and good.reply is not None
    assert good.reply.logprobs == (TokenLogprob("a", -0.5, 7), TokenLogprob("b", 0.0))


def test_a_reply_whose_native_calls_cannot_be_read_is_not_a_message() -> None:
    assert _loaded("assistant", {"model": "m", "tool_calls": [{"name": "shell"}]}) is None
    assert _loaded("assistant", {"model": "m", "tool_calls": "shell"}) is None
    assert from_record({"role": "robot", "content": "x", "time": "2026-12-04"}) is None


def test_how_release_0_1_said_a_run_ended_is_read_as_the_ending() -> None:
    message = _loaded("system", {"status": "step-limit"})
    assert message is not None and message.ending is Outcome.STEP_LIMIT
