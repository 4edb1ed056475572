"""Conversations on disk (one folder each, holding an append-only JSONL log) or in memory.

Every change is one line appended with a single ``write`` on an ``O_APPEND`` descriptor, then
fsynced, so a kill at any moment loses at most the line being written; a torn last line is
ignored on load. Undo is appended too (``{"op": "undo"}``), never a rewrite. A conversation
made without a folder (``Conversation()``) keeps the same state in memory alone.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import shutil
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..errors import UserError
from ..images import adopted
from ..jsonl import read_lines, set_aside
from ..log_records import from_record, to_record
from ..message import Message

LOG_NAME = "conversation.jsonl"
IMAGES = "images"
"""The folder of a conversation's folder that keeps its messages' images."""
PRIVATE_FOLDER = 0o700
PRIVATE_FILE = 0o600
_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")


class ConversationError(UserError, ValueError):
    """A conversation name is invalid, taken, or not found."""


@dataclass(frozen=True, slots=True)
class LogContents:
    """A log as read: its records, where its valid prefix ends, and what was wrong."""

    records: list[dict[str, Any]]
    valid_end: int
    """Bytes of the file that end on a complete line; past them lies a torn last line."""
    problems: list[str]


def read_log(path: Path) -> LogContents:
    """The complete records of a log. A torn final line (a crash or a full disk mid-write) is
    not a record; unreadable complete lines, and lines that are not JSON objects, are skipped
    and said."""
    read = read_lines(path.read_bytes())
    records, problems = [], []
    for number, record in read.lines:
        if isinstance(record, str):
            problems.append(f"line {number} of {path} {record} and was skipped")
        else:
            records.append(record)
    return LogContents(records, read.valid_end, problems)


@dataclass(frozen=True, slots=True)
class ConversationInfo:
    name: str
    modified: datetime
    messages: int
    first_prompt: str


class Conversation:
    """A named conversation; :attr:`messages` is the current state after undos. Without a
    ``folder`` it lives in memory only (``path`` is None).

    ``synced``: each line is fsynced as it is written (the default). A batch task's log is
    synced once, when it is closed: a task that never finished runs again from the start
    (its log with it), and a write to the page cache does not stall the event loop that
    carries every other task.
    """

    def __init__(self, folder: Path | None = None, name: str = "in-memory", *,
                 synced: bool = True):
        self.folder = folder
        self.synced = synced
        self.name = folder.name if folder is not None else name
        self.path = folder / LOG_NAME if folder is not None else None
        self.messages: list[Message] = []
        self.settings: dict[str, Any] = {}
        """What the conversation was last run with (model, format, tools, workspace…), as the
        log says: data, not authority, since a model that could write the log may have
        written it (:mod:`fencecall.cli._chat_cmd` decides what ``--resume`` takes)."""
        self._valid_end = 0
        self.notes: list[str] = []
        """What was found wrong with the log on opening (shown to the user once)."""
        if self.path is not None and self.path.exists():
            contents = read_log(self.path)
            self.notes = contents.problems
            for record in contents.records:
                self._replay(record)
            self._valid_end = contents.valid_end
            torn = self.path.stat().st_size - contents.valid_end
            if torn:
                self.notes.append(f"the last line of {self.path} was torn (a crash mid-write): "
                                  f"its {torn} bytes are not part of the conversation and are "
                                  "set aside in a side file before anything is added")
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
        private_folder(cls.logs_dir(home))
        private_folder(folder)
        os.close(os.open(folder / LOG_NAME, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
        return cls(folder)

    @classmethod
    def open(cls, home: Path, name: str) -> Conversation:
        return cls(cls._existing(home, name))

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

    @classmethod
    def latest(cls, home: Path) -> str:
        """The name of the most recently changed conversation (``--continue``)."""
        base = cls.logs_dir(home)
        logs = list(base.glob(f"*/{LOG_NAME}")) if base.exists() else []
        if not logs:
            raise ConversationError(f"no conversation to continue in {base}")
        return max(logs, key=lambda log: log.stat().st_mtime_ns).parent.name

    @classmethod
    def delete(cls, home: Path, name: str) -> None:
        """Remove a conversation: its log and every file kept beside it."""
        shutil.rmtree(cls._existing(home, name))

    @classmethod
    def _existing(cls, home: Path, name: str) -> Path:
        folder = cls.logs_dir(home) / check_name(name)
        if not (folder / LOG_NAME).exists():
            raise ConversationError(f"no conversation called {name!r} in {cls.logs_dir(home)}")
        return folder

    # -- changing ------------------------------------------------------------------------

    def append(self, message: Message) -> None:
        message = self._keeping_images(message)
        self._write(to_record(message))
        self.messages.append(message)

    def _keeping_images(self, message: Message) -> Message:
        """``message`` with its images' files in this conversation's folder (``images``),
        where ``--resume`` finds them whatever became of the files they came from."""
        if self.folder is None or not message.images:
            return message
        folder = self.folder / IMAGES
        return replace(message, images=tuple(adopted(image, folder) for image in message.images))

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
        if self.folder is None or self.path is None:  # in memory: the state is all there is
            return
        line = log_line(record)
        if self._fd is None:
            private_folder(self.folder)
            self._set_aside_torn_line()
            self._fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, PRIVATE_FILE)
            os.fchmod(self._fd, PRIVATE_FILE)  # whatever the umask, or an older log's mode
        written = os.write(self._fd, line)
        if written != len(line):
            raise OSError(f"{self.path}: short write ({written} of {len(line)} bytes)")
        if self.synced:
            os.fsync(self._fd)

    def remember(self, settings: dict[str, Any]) -> None:
        """Record the settings this conversation runs with (when they changed)."""
        if settings != self.settings:
            self._write({"op": "settings", "settings": settings,
                         "time": datetime.now(UTC).isoformat()})
            self.settings = dict(settings)

    def _replay(self, record: dict[str, Any]) -> None:
        if record.get("op") == "settings":
            settings = record.get("settings")
            if isinstance(settings, dict):
                self.settings = settings
            else:
                self.notes.append(f"a settings record of {self.path} is not a table and was "
                                  "ignored")
        elif record.get("op") == "undo":
            count = record.get("count")
            if isinstance(count, int) and not isinstance(count, bool) and count >= 1:
                del self.messages[-count:]
            else:
                self.notes.append(f"an undo record of {self.path} has no count of 1 or more "
                                  "and was ignored")
        elif record.get("op") == "message":
            message = from_record(record)
            if message is not None:
                self.messages.append(message)
            else:
                self.notes.append(f"a message record of {self.path} is malformed and was "
                                  "skipped")

    def _set_aside_torn_line(self) -> None:
        """Move a torn last line into a side file and cut the log back to its valid prefix,
        so the next append starts a line of its own instead of gluing onto the fragment.
        (Done before the first write, not on opening: listing conversations changes none.)"""
        valid_end = self._valid_end
        if self.path is None or self.folder is None or not self.path.exists() \
                or self.path.stat().st_size == valid_end:
            return
        with self.path.open("r+b") as log:
            log.seek(valid_end)
            set_aside(self.path, log.fileno(), valid_end, log.read())

    def close(self) -> None:
        if self._fd is not None:
            try:
                if not self.synced:
                    os.fsync(self._fd)
            finally:
                os.close(self._fd)
                self._fd = None


def log_line(record: dict[str, Any]) -> bytes:
    """``record`` as one line of a log: UTF-8 JSON, readable as it is. What UTF-8 cannot hold
    (a lone surrogate, which entry points replace, but a log writer must not trust that:
    failing here would end the session) is written with JSON's ASCII escapes instead
    (``\\ud800``), so the line can always be written and reads back exactly."""
    text = json.dumps(record, ensure_ascii=False)
    try:
        return (text + "\n").encode()
    except UnicodeEncodeError:
        return (json.dumps(record) + "\n").encode()


def private_folder(folder: Path) -> None:
    """Create ``folder`` (and its parents) and make it readable by its owner alone, whatever
    the umask: conversations hold what tools printed."""
    folder.mkdir(parents=True, exist_ok=True)
    os.chmod(folder, PRIVATE_FOLDER)


def check_name(name: str) -> str:
    if not _NAME_RE.fullmatch(name):
        raise ConversationError(f"invalid conversation name {name!r}: use letters, digits, "
                                "'.', '_' and '-' (no slashes)")
    return name
