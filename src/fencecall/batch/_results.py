"""Batch results: one JSON line per finished task in an append-only file, and resuming.

Each result is one ``write`` on an ``O_APPEND`` descriptor, then fsynced, so a kill at any
moment loses at most the line being written. Opening the file reads the ids already there
(those tasks are finished and are not run again) and sets a torn last line aside in a side
file, so its task runs again and gets exactly one complete line. The file is locked while a
batch writes it: two batches on one file would run tasks twice.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from decimal import Decimal
from pathlib import Path
from typing import Any

from ..agent.conversation import log_line
from ..errors import UserError
from ..jsonl import read_lines, set_aside
from ..message import Outcome

STATUSES = tuple(outcome.value for outcome in Outcome if outcome is not Outcome.INTERRUPTED)
"""How a task may end (a :class:`~fencecall.message.Outcome`; nobody is there to interrupt
it): the model answered; it hit its step limit; reply after reply ran nothing despite
feedback; the model or the task's setup failed; it ran past its timeout; the batch stopped."""


class ResultFileError(UserError, OSError):
    """The results file cannot be used (another batch holds it, or it cannot be opened)."""


@dataclass(frozen=True, slots=True)
class ToolCallRecord:
    """One tool call of a task: its tool, ``ok`` or its failure status, how long it took,
    and for a failure the start of what the model was told."""

    tool: str
    outcome: str
    duration_s: float | None = None
    error: str | None = None


@dataclass(frozen=True, slots=True)
class TaskResult:
    """What one task came to: a line of the results file (:meth:`record`)."""

    id: str
    status: Outcome
    final: str | None = None
    """The model's last reply (its answer when ``status`` is done)."""
    error: str | None = None
    steps: int = 0
    """Model replies."""
    tool_calls: tuple[ToolCallRecord, ...] = ()
    tool_errors: int = 0
    tokens: Mapping[str, int] = field(default_factory=dict)
    counted_replies: int = 0
    """Replies the provider reported no usage for (a reply stopped at its call is cut
    before the server reports it), counted by fencecall, as in ``fencecall stats``."""
    estimated_replies: int = 0
    """Of those, the ones counted by the estimate that errs high (no tokenizer to hand)."""
    cost_usd: str | None = None
    """Decimal text; None when any reply's price is unknown (a local model, say)."""
    model: str | None = None
    wall_s: float = 0.0
    diff: str | None = None
    """``git diff`` of the workspace against where it started, when it is a repository."""
    log: str | None = None
    workspace: str | None = None
    metadata: Mapping[str, Any] = field(default_factory=dict)
    started: str | None = None
    finished: str | None = None
    trajectory: str | None = None
    """With ``--trajectories``: the task's trajectory in ATIF, beside its log."""

    @property
    def failed(self) -> bool:
        return self.status is not Outcome.DONE

    def record(self) -> dict[str, Any]:
        record = asdict(self)
        record["tool_calls"] = [{k: v for k, v in call.items() if v is not None}
                                for call in record["tool_calls"]]
        return record

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> TaskResult:
        known = {name: record[name] for name in cls.__dataclass_fields__ if name in record}
        known["tool_calls"] = tuple(ToolCallRecord(**call)
                                    for call in record.get("tool_calls") or ())
        known["status"] = Outcome(record["status"])
        return cls(**known)


class ResultFile:
    """The results of a batch, open for appending; :attr:`records` maps the ids already
    finished to their records, :attr:`notes` says what was wrong with the file."""

    def __init__(self, path: Path):
        self.path = path
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            self._fd: int | None = os.open(path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o600)
        except OSError as err:
            raise ResultFileError(f"{path}: cannot open the results file ({err})") from None
        try:
            fcntl.flock(self._fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self.close()
            raise ResultFileError(f"{path}: another fencecall batch is writing this results "
                                  "file; wait for it or choose another --out") from None
        self.records: dict[str, dict[str, Any]] = {}
        self.notes: list[str] = []
        self._load()

    def _load(self) -> None:
        assert self._fd is not None
        with open(self._fd, "rb", closefd=False) as handle:
            data = handle.read()
        read = read_lines(data)
        for number, record in read.lines:
            if isinstance(record, str) or not isinstance(record.get("id"), str):
                self.notes.append(f"line {number} of {self.path} is not a result and was "
                                  "skipped")
            elif record["id"] in self.records:
                self.notes.append(f"line {number} of {self.path} repeats task "
                                  f"{record['id']!r}; the first result counts")
            else:
                self.records[record["id"]] = record
        if read.valid_end < len(data):  # a torn last line: its task has no result
            fragment = data[read.valid_end:]
            side = set_aside(self.path, self._fd, read.valid_end, fragment)
            self.notes.append(f"the last line of {self.path} was torn (a kill mid-write): "
                              f"its {len(fragment)} bytes were set aside in {side.name}, and "
                              "its task runs again")

    @property
    def finished(self) -> frozenset[str]:
        return frozenset(self.records)

    def spent(self) -> tuple[Decimal, int]:
        """USD and tokens the results so far spent (a cost that is no number counts as
        none: a model without a price)."""
        usd, tokens = Decimal(0), 0
        for record in self.records.values():
            with contextlib.suppress(TypeError, ArithmeticError):
                usd += Decimal(str(record.get("cost_usd")))
            counts = record.get("tokens")
            if isinstance(counts, dict):
                tokens += sum(n for n in counts.values()
                              if isinstance(n, int) and not isinstance(n, bool))
        return usd, tokens

    def append(self, result: TaskResult | Mapping[str, Any]) -> None:
        """Add one result as one fsynced line."""
        if self._fd is None:
            raise ResultFileError(f"{self.path}: the results file is closed")
        record = result.record() if isinstance(result, TaskResult) else dict(result)
        line = log_line(record)
        written = os.write(self._fd, line)
        if written != len(line):
            raise OSError(f"{self.path}: short write ({written} of {len(line)} bytes)")
        os.fsync(self._fd)
        self.records[str(record["id"])] = record

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None

    def __enter__(self) -> ResultFile:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
