"""Conversations on disk: one folder each, holding an append-only JSONL log.

Every change is one line appended with a single ``write`` on an ``O_APPEND`` descriptor, then
fsynced, so a kill at any moment loses at most the line being written; a torn last line is
ignored on load. Undo is appended too (``{"op": "undo"}``), never a rewrite.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..message import Message

LOG_NAME = "conversation.jsonl"
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class ConversationError(UserError, ValueError):
    """A conversation name is invalid, taken, or not found."""


def _message_record(message: Message) -> dict[str, Any]:
    record: dict[str, Any] = {"op": "message", "role": message.role, "content": message.content,
                              "time": message.timestamp.isoformat()}
    if message.call_id is not None:
        record["call_id"] = message.call_id
    if message.metadata:
        record["metadata"] = dict(message.metadata)
    return record


def _message_from(record: dict[str, Any]) -> Message:
    return Message(record["role"], record["content"], record.get("call_id"),
                   datetime.fromisoformat(record["time"]), record.get("metadata") or {})


def read_records(path: Path) -> Iterator[dict[str, Any]]:
    """The complete records of a log; a torn final line (a crash mid-write) is skipped."""
    data = path.read_bytes()
    lines = data.split(b"\n")
    complete, torn = lines[:-1], lines[-1]
    for number, line in enumerate(complete, 1):
        if not line.strip():
            continue
        try:
            yield json.loads(line)
        except json.JSONDecodeError:
            warnings.warn(f"{path}:{number}: unreadable line skipped", stacklevel=2)
    if torn.strip():
        try:
            record = json.loads(torn)
        except json.JSONDecodeError:
            return  # the line being written when the process died
        yield record


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    name: str
    modified: datetime
    messages: int
    first_prompt: str


class Conversation:
    """A named conversation; :attr:`messages` is the current state after undos."""

    def __init__(self, folder: Path):
        self.folder = folder
        self.name = folder.name
        self.path = folder / LOG_NAME
        self.messages: list[Message] = []
        if self.path.exists():
            for record in read_records(self.path):
                self._replay(record)
        self._fd: int | None = None

    # -- opening -------------------------------------------------------------------------

    @staticmethod
    def logs_dir(home: Path) -> Path:
        return home / "conversations"

    @classmethod
    def create(cls, home: Path, name: str | None = None) -> Conversation:
        if name is None:
            name = datetime.now(UTC).strftime("%Y-%m-%d-%H%M%S-") + secrets.token_hex(2)
        folder = cls.logs_dir(home) / check_name(name)
        if (folder / LOG_NAME).exists():
            raise ConversationError(f"a conversation called {name!r} exists; resume it instead")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / LOG_NAME).touch()
        return cls(folder)

    @classmethod
    def open(cls, home: Path, name: str) -> Conversation:
        folder = cls.logs_dir(home) / check_name(name)
        if not (folder / LOG_NAME).exists():
            raise ConversationError(f"no conversation called {name!r} in "
                                    f"{cls.logs_dir(home)}")
        return cls(folder)

    @classmethod
    def list_all(cls, home: Path) -> list[ConversationInfo]:
        """Conversations, most recently changed first."""
        infos = []
        base = cls.logs_dir(home)
        for log in base.glob(f"*/{LOG_NAME}") if base.exists() else ():
            conversation = cls(log.parent)
            prompt = next((m.content for m in conversation.messages if m.role == "user"), "")
            infos.append(ConversationInfo(
                log.parent.name, datetime.fromtimestamp(log.stat().st_mtime, UTC),
                len(conversation.messages), prompt.splitlines()[0] if prompt else ""))
        return sorted(infos, key=lambda info: info.modified, reverse=True)

    # -- changing ------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        self._write(_message_record(message))
        self.messages.append(message)

    def undo(self, count: int = 1) -> list[Message]:
        """Drop the last ``count`` messages; returns them."""
        count = min(count, len(self.messages))
        if count <= 0:
            return []
        self._write({"op": "undo", "count": count, "time": datetime.now(UTC).isoformat()})
        removed = self.messages[-count:]
        del self.messages[-count:]
        return removed

    def _write(self, record: dict[str, Any]) -> None:
        line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
        if self._fd is None:
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        written = os.write(self._fd, line)
        if written != len(line):
            raise OSError(f"{self.path}: short write ({written} of {len(line)} bytes)")
        os.fsync(self._fd)

    def _replay(self, record: dict[str, Any]) -> None:
        if record.get("op") == "undo":
            del self.messages[-int(record["count"]):]
        elif record.get("op") == "message":
            self.messages.append(_message_from(record))

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def check_name(name: str) -> str:
    if not _NAME_RE.fullmatch(name):
        raise ConversationError(f"invalid conversation name {name!r}: use letters, digits, "
                                "'.', '_' and '-' (no slashes)")
    return name
