"""The conversation log: append-only, crash-safe, undo by appending."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from fencecall.agent import Conversation, ConversationError
from fencecall.message import Message


def test_append_replay_and_undo(tmp_path: Path) -> None:
    conversation = Conversation.create(tmp_path, "c")
    for i in range(4):
        conversation.append(Message("user", f"m{i}", call_id=f"id{i}", metadata={"n": i}))
    assert [m.content for m in conversation.undo(2)] == ["m2", "m3"]
    conversation.append(Message("assistant", "after undo"))
    conversation.close()
    reloaded = Conversation.open(tmp_path, "c")
    assert [(m.content, m.call_id) for m in reloaded.messages] == [
        ("m0", "id0"), ("m1", "id1"), ("after undo", None)]
    assert reloaded.messages[1].metadata == {"n": 1}
    ops = [json.loads(line)["op"] for line in log_of(reloaded).read_text().splitlines()]
    assert ops == ["message"] * 4 + ["undo", "message"]  # nothing was rewritten


def log_of(conversation: Conversation) -> Path:
    assert conversation.path is not None, "an on-disk conversation"
    return conversation.path


def test_torn_last_line_is_ignored(tmp_path: Path) -> None:
    conversation = Conversation.create(tmp_path, "torn")
    conversation.append(Message("user", "kept"))
    conversation.close()
    with log_of(conversation).open("a") as handle:
        handle.write('{"op": "message", "role": "assistant", "content": "half')
    listed = Conversation.list_all(tmp_path)
    assert listed[0].messages == 1
    reopened = Conversation.open(tmp_path, "torn")
    assert [m.content for m in reopened.messages] == ["kept"]
    assert len(reopened.notes) == 1 and "was torn (a crash mid-write)" in reopened.notes[0]
    assert b"half" in log_of(reopened).read_bytes()  # opening and listing change nothing
    reopened.append(Message("user", "after the crash"))
    reopened.append(Message("user", "and more"))
    reopened.close()
    again = Conversation.open(tmp_path, "torn")
    assert [m.content for m in again.messages] == ["kept", "after the crash", "and more"]
    assert again.notes == []
    [side] = list(log_of(again).parent.glob("conversation.jsonl.torn-*"))
    assert side.read_bytes() == b'{"op": "message", "role": "assistant", "content": "half'


def test_an_unreadable_line_is_said_not_warned(tmp_path: Path,
                                               recwarn: pytest.WarningsRecorder) -> None:
    conversation = Conversation.create(tmp_path, "bad")
    conversation.append(Message("user", "one"))
    conversation.close()
    with log_of(conversation).open("a") as handle:
        handle.write("not json at all\n")
    reopened = Conversation.open(tmp_path, "bad")
    assert [m.content for m in reopened.messages] == ["one"]
    assert reopened.notes == [f"line 2 of {reopened.path} could not be read and was skipped"]
    assert len(recwarn) == 0


def test_kill_at_any_moment_loses_at_most_one_message(tmp_path: Path) -> None:
    writer = (
        "import sys\nfrom pathlib import Path\nfrom fencecall.agent import Conversation\n"
        "from fencecall.message import Message\n"
        "c = Conversation.create(Path(sys.argv[1]), 'killed')\nprint('ready', flush=True)\n"
        "i = 0\nwhile True:\n    c.append(Message('user', 'x' * 5000 + str(i)))\n    i += 1\n")
    proc = subprocess.Popen([sys.executable, "-c", writer, str(tmp_path)],
                            stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    path = tmp_path / "conversations" / "killed" / "conversation.jsonl"
    lines = path.read_bytes().split(b"\n")
    complete = len(lines) - 1
    messages = Conversation.open(tmp_path, "killed").messages
    assert complete > 0
    assert len(messages) in (complete, complete + 1)
    assert [m.content[5000:] for m in messages] == [str(i) for i in range(len(messages))]


def test_names_listing_and_errors(tmp_path: Path) -> None:
    with pytest.raises(ConversationError, match="invalid conversation name"):
        Conversation.create(tmp_path, "../escape")
    with pytest.raises(ConversationError, match="no conversation called"):
        Conversation.open(tmp_path, "absent")
    first = Conversation.create(tmp_path)
    first.append(Message("user", "what is up\nsecond line"))
    first.close()
    [info] = Conversation.list_all(tmp_path)
    assert (info.name, info.messages, info.first_prompt) == (first.name, 1, "what is up")


def test_conversations_are_private_whatever_the_umask(tmp_path: Path) -> None:
    old = os.umask(0)
    try:
        conversation = Conversation.create(tmp_path, "private")
        conversation.append(Message("user", "my secret plans"))
        conversation.close()
        legacy = tmp_path / "conversations" / "legacy"
        legacy.mkdir(mode=0o777)
        (legacy / "conversation.jsonl").write_text("")
        os.chmod(legacy / "conversation.jsonl", 0o666)
        reopened = Conversation.open(tmp_path, "legacy")
        reopened.append(Message("user", "more"))
        reopened.close()
    finally:
        os.umask(old)
    for folder in (tmp_path / "conversations", log_of(conversation).parent, legacy):
        assert stat.S_IMODE(folder.stat().st_mode) == 0o700, folder
    for log in (log_of(conversation), log_of(reopened)):
        assert stat.S_IMODE(log.stat().st_mode) == 0o600, log


def test_records_this_code_could_not_have_written_are_skipped_with_a_note(
        tmp_path: Path) -> None:
    """A log is data: a hand-edited (or model-edited) record never crashes the load."""
    import json

    from fencecall.agent import Conversation

    good = {"op": "message", "role": "user", "content": "hi", "time": "2026-01-01T00:00:00"}
    bad = [{"op": "message", "role": "user", "content": "no time"},
           {**good, "role": "root"}, {**good, "content": 5}, {**good, "metadata": [1, 2]},
           {**good, "metadata": {"tool_calls": [{"id": 1}]}}, {**good, "call_id": 7},
           {**good, "time": "yesterday"}, {"op": "undo", "count": "x"},
           {"op": "undo", "count": -1}, {"op": "undo", "count": True}]
    folder = Conversation.logs_dir(tmp_path) / "edited"
    folder.mkdir(parents=True)
    (folder / "conversation.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in [good, *bad, good]))
    conversation = Conversation.open(tmp_path, "edited")
    assert [m.content for m in conversation.messages] == ["hi", "hi"]
    assert len(conversation.notes) == len(bad)


def test_text_utf8_cannot_hold_is_logged_exactly(tmp_path: Path) -> None:
    """A lone surrogate (JSON's "\\ud800" decodes to one) must not make the log writer fail
    and end the session: the line is written with JSON's escapes and reads back as it was."""
    conversation = Conversation.create(tmp_path, "odd")
    conversation.append(Message("user", "plain é"))
    conversation.append(Message("system", "a\ud800b", metadata={"raw": "\udcff"}))
    conversation.close()
    lines = log_of(conversation).read_bytes().decode("utf-8").splitlines()  # valid UTF-8
    assert "é" in lines[0] and "\\ud800" in lines[1]  # readable where it can be
    reloaded = Conversation.open(tmp_path, "odd")
    assert [m.content for m in reloaded.messages] == ["plain é", "a\ud800b"]
    assert reloaded.messages[1].metadata == {"raw": "\udcff"} and reloaded.notes == []
