"""A message as one JSON record of a conversation log, and back.

The typed parts of a :class:`~fencecall.message.Message` (its call's record, its reply's
record, how a run ended, its note to the loop) are written into the record's ``metadata``
object under the keys logs have always had (``tool``, ``status``, ``outcome``,
``duration_s``, ``model``, ``usage``, ``tool_calls``, ``reminder``, ``compaction``…), so the
log stays one readable object per line and logs written by earlier releases load as they
were. A log is data (it may have been edited, by hand or by a model): a value of the wrong
type is left out, and a message whose native calls are unreadable is not a message at all,
since the next request would show them to the model.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, TypeGuard, cast, get_args

from .message import (
    CallRecord,
    CannotRun,
    Compacted,
    Completion,
    ImageRef,
    JobEnded,
    LimitReached,
    Message,
    NativeCallRecord,
    Note,
    Nudge,
    Outcome,
    ReplyRecord,
    Role,
    Status,
    TokenLogprob,
    Usage,
)

_CALL_KEYS = ("outcome", "duration_s", "error_type")
_REPLY_KEYS = ("model", "provider", "provider_url", "usage", "tool_calls", "cut", "loop",
               "usage_counted", "logprobs")
_RESULT_KEYS = ("tool", "status", "exit_code", "ending", *_CALL_KEYS)
_STATUSES = {status.value: status for status in Status}
_OUTCOMES = {outcome.value: outcome for outcome in Outcome}


def to_record(message: Message) -> dict[str, Any]:
    """The log record of ``message``."""
    record: dict[str, Any] = {"op": "message", "role": message.role,
                              "content": message.content,
                              "time": message.timestamp.isoformat()}
    if message.call_id is not None:
        record["call_id"] = message.call_id
    if message.images:
        record["images"] = [{"path": i.path, "media_type": i.media_type, "width": i.width,
                             "height": i.height, "size": i.size, "source": i.source}
                            for i in message.images]
    metadata = {**message.metadata, **_typed_metadata(message), **_note_metadata(message.note)}
    if metadata:
        record["metadata"] = metadata
    return record


def _typed_metadata(message: Message) -> dict[str, Any]:
    found: dict[str, Any] = {}
    if message.tool is not None:
        found["tool"] = message.tool
    if message.status is not None:
        found["status"] = message.status.value
    if message.exit_code is not None:
        found["exit_code"] = message.exit_code
    if message.ending is not None:
        found["ending"] = message.ending.value
    if (call := message.call) is not None:
        found["tool"] = call.tool
        found["duration_s"] = call.duration_s
        found["outcome"] = call.outcome
        if call.error_type is not None:
            found["error_type"] = call.error_type
    if (reply := message.reply) is not None:
        if reply.model:
            found["model"] = reply.model
        if reply.provider:
            found["provider"] = reply.provider
        if reply.provider_url:
            found["provider_url"] = reply.provider_url
        if reply.usage is not None:
            found["usage"] = reply.usage.as_dict()
        if reply.native_calls:
            found["tool_calls"] = [{"id": c.id, "name": c.name, "arguments": dict(c.arguments)}
                                   for c in reply.native_calls]
        if reply.cut:
            found["cut"] = reply.stop_reason
        if reply.loop is not None:
            found["loop"] = reply.loop
        if reply.counted is not None:
            found["usage_counted"] = reply.counted
        if reply.logprobs is not None:
            found["logprobs"] = [_scored(token) for token in reply.logprobs]
    return found


def _scored(token: TokenLogprob) -> dict[str, Any]:
    found: dict[str, Any] = {"token": token.token, "logprob": token.logprob}
    if token.token_id is not None:
        found["id"] = token.token_id
    return found


def from_record(record: Mapping[str, Any]) -> Message | None:
    """The message a record holds, or None when it is not one this code could have written."""
    role, content, call_id = record.get("role"), record.get("content"), record.get("call_id")
    metadata = record.get("metadata") or {}
    if role not in get_args(Role) or not isinstance(content, str) or not isinstance(
            metadata, dict) or not (call_id is None or isinstance(call_id, str)):
        return None
    try:
        time = datetime.fromisoformat(record["time"])
    except (KeyError, TypeError, ValueError):
        return None
    if "tool_calls" in metadata and not _readable_calls(metadata["tool_calls"]):
        return None
    # a reply, or a compaction, which carries the record of the summary request it made
    reply = _reply(metadata) if role == "assistant" or isinstance(
        metadata.get("compaction"), dict) else None
    tool = _text(metadata.get("tool"))
    status_word = metadata.get("status")
    ending = _OUTCOMES.get(_text(metadata.get("ending")) or "")
    if ending is None and status_word in ("step-limit", "gave-up"):  # how 0.1 said it
        ending = _OUTCOMES[status_word]
    exit_code = metadata.get("exit_code")
    note, note_keys = _note(metadata) if role == "system" else (None, ())
    typed = ((*_RESULT_KEYS, *note_keys, *(_REPLY_KEYS if reply is not None else ()))
             if role == "system" else _REPLY_KEYS if reply is not None else ())
    return Message(
        cast(Role, role), content, call_id, time,
        {key: value for key, value in metadata.items() if key not in typed}, note=note,
        tool=tool if role == "system" else None,
        status=_STATUSES.get(status_word) if isinstance(status_word, str) else None,
        exit_code=exit_code if _is_int(exit_code) else None,
        call=_call(tool, metadata) if role == "system" else None,
        reply=reply, ending=ending if role == "system" else None,
        images=_images(record.get("images")))


def _images(value: Any) -> tuple[ImageRef, ...]:
    """The images a record refers to; an entry that is not one is left out."""
    if not isinstance(value, list):
        return ()
    return tuple(
        ImageRef(item["path"], item["media_type"], item["width"], item["height"],
                 item["size"], _text(item.get("source")) or "")
        for item in value if isinstance(item, dict)
        and all(isinstance(item.get(key), str) for key in ("path", "media_type"))
        and all(_is_int(item.get(key)) for key in ("width", "height", "size")))


def _note_metadata(note: Note | None) -> dict[str, Any]:
    """The keys a note is logged under (those the loop and the pipeline always wrote)."""
    match note:
        case None:
            return {}
        case Nudge():
            return {note.value: True}
        case LimitReached(kind):
            return {"limit": kind}
        case JobEnded(job, state):
            return {"job_ended": job, "job_state": state}
        case Compacted(kept, replaced, mode):
            return {"compaction": {"kept": kept, "replaced": replaced, "mode": mode}}
        case Completion():
            return {"complete": True}
    found: dict[str, Any] = {"diagnostic": note.malformed, "near_miss": list(note.near_misses),
                             "unloaded": list(note.unloaded), "line": note.line}
    return {key: value for key, value in found.items() if value not in (None, [])}


def _note(metadata: Mapping[str, Any]) -> tuple[Note | None, tuple[str, ...]]:
    """The note a system record's metadata holds, and the keys it was read from."""
    for nudge in Nudge:
        if metadata.get(nudge.value) is True:
            return nudge, (nudge.value,)
    if (limit := _text(metadata.get("limit"))) is not None:
        return LimitReached(limit), ("limit",)
    if _is_int(job := metadata.get("job_ended")):
        state = _text(metadata.get("job_state")) or "ended"
        return JobEnded(job, state), ("job_ended", "job_state")
    if isinstance(record := metadata.get("compaction"), dict):
        return Compacted(_count(record, "kept"), _count(record, "replaced"),
                          "drop" if record.get("mode") == "drop" else "summary"), ("compaction",)
    if metadata.get("complete") is True:
        return Completion(), ("complete",)
    cannot = CannotRun(_text(metadata.get("diagnostic")), _names(metadata.get("near_miss")),
                       _names(metadata.get("unloaded")))
    if cannot == CannotRun():
        return None, ()
    line = metadata.get("line")
    return (CannotRun(cannot.malformed, cannot.near_misses, cannot.unloaded,
                      line if _is_int(line) else None),
            ("diagnostic", "near_miss", "unloaded", "line"))


def _count(record: Mapping[str, Any], key: str) -> int:
    value = record.get(key)
    return value if _is_int(value) and value > 0 else 0


def _names(value: Any) -> tuple[str, ...]:
    return tuple(item for item in value if isinstance(item, str)) if isinstance(
        value, list) else ()


def _call(tool: str | None, metadata: Mapping[str, Any]) -> CallRecord | None:
    outcome, duration = metadata.get("outcome"), metadata.get("duration_s")
    if not isinstance(outcome, str):
        return None
    exit_code = metadata.get("exit_code")  # an outcome no release wrote is taken for an error
    status = None if outcome == "ok" else _STATUSES.get(outcome, Status.ERROR)
    return CallRecord(tool or "(unknown)", status,
                      float(duration) if _is_number(duration) else 0.0,
                      _text(metadata.get("error_type")),
                      exit_code if _is_int(exit_code) else None)


def _reply(metadata: Mapping[str, Any]) -> ReplyRecord | None:
    """The reply's record; None if it has no model, or native calls that cannot be read."""
    model = _text(metadata.get("model"))
    calls = metadata.get("tool_calls") or []
    if not _readable_calls(calls):
        return None
    if model is None:
        if calls:  # native calls without a model: kept so they are answered and shown
            return ReplyRecord("", "", native_calls=_native(calls))
        return None
    cut = metadata.get("cut")
    loop = metadata.get("loop")
    usage = _usage(metadata.get("usage"))
    counted = metadata.get("usage_counted")
    return ReplyRecord(model, _text(metadata.get("provider")) or "",
                       _text(metadata.get("provider_url")), usage,
                       _native(calls), "cut" in metadata, cut if isinstance(cut, str) else None,
                       loop if isinstance(loop, str) else None,
                       counted if counted in ("tokenizer", "estimate") and usage else None,
                       _logprobs(metadata.get("logprobs")))


def _logprobs(value: Any) -> tuple[TokenLogprob, ...] | None:
    """The reply's scored tokens; None where absent or any entry is not one."""
    if not isinstance(value, list) or not all(
            isinstance(item, dict) and isinstance(item.get("token"), str)
            and _is_number(item.get("logprob"))
            and (item.get("id") is None or _is_int(item.get("id"))) for item in value):
        return None
    return tuple(TokenLogprob(item["token"], float(item["logprob"]), item.get("id"))
                 for item in value)


def _readable_calls(calls: Any) -> TypeGuard[list[dict[str, Any]]]:
    return isinstance(calls, list) and all(
        isinstance(c, dict) and isinstance(c.get("id"), str)
        and isinstance(c.get("name"), str) and isinstance(c.get("arguments"), dict)
        for c in calls)


def _native(calls: list[dict[str, Any]]) -> tuple[NativeCallRecord, ...]:
    return tuple(NativeCallRecord(c["id"], c["name"], c["arguments"]) for c in calls)


def _usage(value: Any) -> Usage | None:
    if not isinstance(value, dict):
        return None
    counts = {key: value.get(key, 0) for key in
              ("input_tokens", "output_tokens", "cache_read_tokens", "cache_write_tokens")}
    if not all(_is_int(count) and count >= 0 for count in counts.values()):
        return None
    return Usage(**counts)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _is_int(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)
