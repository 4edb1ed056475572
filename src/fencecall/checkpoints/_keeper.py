"""The checkpoints of one conversation: recorded around the turns, and a turn gone back to.

A *turn* is a user message and what followed it. Before each call that can write, the
workspace's state is recorded (a session hook, the last to run before the call, so a call
another hook blocks records nothing); the first such record of a turn is the state the turn
started from, and when the turn ends its state is recorded again (:meth:`end_turn`). Each
record is a line of ``turns.jsonl``, naming the turn by its message's index and time, so a
record whose turn was undone in some other way never matches the turn that took its place.

Going back to before turn *k* puts back the state the first turn from *k* on that wrote
started from. A path counts as changed by hand where its content differs between the end of
one turn and the start of the next recorded one, or between the end of the last turn and
now (an edit of the user's, or of a background job): going back overwrites it only when the
caller says so.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ..jsonl import read_lines
from ..message import Message
from ..sandbox import SandboxPolicy
from ..tools import HookRegistry, ToolInvocation
from ..tools.hook_points import TOOL_PRE_EXECUTE, ToolPreExecute
from ..tools.runtime.shell_policy import is_read_only
from ..tools.spec import Hint
from ._restore import Change, changes, restore
from ._scan import MAX_ENTRIES, MAX_FILE, Scanner
from ._store import Manifest, Store

PRIORITY = -100_000
"""The checkpoint is taken after every other pre-execute hook had its say."""
LOG = "turns.jsonl"


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn of a conversation: its ``number`` (from 1), the ``index`` of its user
    message, the prompt, and the states recorded at its first writing call and at its end
    (None: none, as it ran no call that can write)."""

    number: int
    index: int
    prompt: str
    before: str | None = None
    after: str | None = None
    last: str | None = None
    """The turn's latest record (its end where it was recorded, else its last call's)."""


@dataclass(frozen=True, slots=True)
class Plan:
    """What going back to before turn ``turn`` does: the ``messages`` it removes, the file
    ``changes`` (none where no turn from it on wrote), the paths among them changed since
    fencecall recorded them (``edited``), and the paths not kept that it leaves alone."""

    turn: Turn
    messages: int
    changes: list[Change] = field(default_factory=list)
    edited: list[str] = field(default_factory=list)
    not_kept: dict[str, str] = field(default_factory=dict)
    now: Manifest | None = None
    target: Manifest | None = None


def can_write(invocation: ToolInvocation) -> bool:
    """Whether a call may change the workspace: not a read-only tool, nor a command run in
    a read-only sandbox (the policy's, or the one-shot sandbox of a read-only shell line)."""
    spec = invocation.spec
    if Hint.READ_ONLY in spec.hints:
        return False
    if Hint.EXEC not in spec.hints:
        return True
    sandbox = invocation.context.sandbox
    if sandbox.policy is SandboxPolicy.READ_ONLY:
        return False
    command = invocation.kwargs.get("command")
    return not (spec.name == "shell" and sandbox.enforced and isinstance(command, str)
                and is_read_only(command))


class Checkpoints:
    """The checkpoints of the workspace ``workspace`` kept in ``folder`` (a conversation's;
    it and the ``excluded`` folders, fencecall's, are never recorded). A file over
    ``max_file`` bytes is not kept; a workspace of more than ``max_entries`` paths gets no
    checkpoints (see :mod:`._scan`)."""

    def __init__(self, folder: Path, workspace: Path, *, excluded: tuple[Path, ...] = (),
                 max_file: int = MAX_FILE, max_entries: int = MAX_ENTRIES) -> None:
        self.folder = folder
        self.workspace = workspace
        self.store = Store(folder)
        self._scanner = Scanner(workspace, self.store, excluded=(folder, *excluded),
                                max_file=max_file, max_entries=max_entries)
        self._log = folder / LOG
        self._open: tuple[int, str] | None = None
        self._off: str | None = None
        self._last: tuple[Manifest, str] | None = None
        self._told: set[str] = set()
        """The paths not kept that the conversation was told of."""
        self._lock = threading.Lock()

    def install(self, hooks: HookRegistry) -> None:
        """Record the workspace before each call of ``hooks``' session that can write."""
        hooks.add(TOOL_PRE_EXECUTE, self._before_call, priority=PRIORITY, name="checkpoints")

    def _before_call(self, event: ToolPreExecute) -> str | None:
        if self._off is not None or not can_write(event.invocation):
            return None
        turn = _current_turn(event.history)
        if turn is None:
            return None
        try:
            self.record(turn)
        except OSError as err:
            self._off = str(err)
            return (f"No checkpoints of the workspace are kept from now on ({err}); /undo "
                    "and /rewind will not restore files.")
        skipped = self._last[0].skipped if self._last is not None else {}
        new = {path: why for path, why in skipped.items() if path not in self._told}
        self._told |= new.keys()
        if not new:
            return None
        listed = "; ".join(f"{path} ({why})" for path, why in sorted(new.items())[:10])
        more = f"; and {len(new) - 10} more" if len(new) > 10 else ""
        return (f"Not kept in the workspace's checkpoint, so an undo leaves them as they "
                f"are: {listed}{more}.")

    def record(self, turn: tuple[int, str]) -> str:
        """Record the workspace as it is, as a checkpoint of ``turn`` (message index and
        time); the checkpoint's name."""
        with self._lock:
            name = self._save(self._scanner.scan())
            self._write({"turn": turn[0], "stamp": turn[1], "checkpoint": name,
                         "workspace": str(self.workspace)})
            self._open = turn
            return name

    def end_turn(self) -> None:
        """Record the end of the turn that recorded a checkpoint (nothing otherwise)."""
        with self._lock:
            turn, self._open = self._open, None
            if turn is None or self._off is not None:
                return
            try:
                name = self._save(self._scanner.scan())
                self._scanner.save_cache()
            except OSError as err:
                self._off = str(err)
                return
            self._write({"turn": turn[0], "stamp": turn[1], "after": name,
                         "workspace": str(self.workspace)})

    def _save(self, manifest: Manifest) -> str:
        """Keep ``manifest``; its name (the last one's, where nothing changed since)."""
        if self._last is None or self._last[0] != manifest:
            self._last = manifest, self.store.save(manifest)
        return self._last[1]

    def _write(self, record: dict[str, Any]) -> None:
        """Append ``record`` to the log with one ``write`` (a crash tears one line at most,
        which reading skips)."""
        record["time"] = datetime.now(UTC).isoformat()
        line = (json.dumps(record, separators=(",", ":")) + "\n").encode()
        fd = os.open(self._log, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            os.write(fd, line)
        finally:
            os.close(fd)

    def turns(self, messages: Sequence[Message]) -> list[Turn]:
        """The conversation's turns, with the checkpoints recorded for each."""
        return turns(messages, self._records())

    def _records(self) -> dict[tuple[int, str], dict[str, str]]:
        """Each turn's checkpoints of this workspace as the log holds them: its first
        (``before``), its latest (``last``) and its end (``after``, unless a later call of
        the turn followed it). A checkpoint of another folder (a conversation resumed
        elsewhere) is never put back here, where it would remove what it did not record."""
        found: dict[tuple[int, str], dict[str, str]] = {}
        for record in _log_records(self._log):
            if record.get("workspace") != str(self.workspace):
                continue
            turn, stamp = record.get("turn"), record.get("stamp")
            if not isinstance(turn, int) or not isinstance(stamp, str):
                continue
            names = found.setdefault((turn, stamp), {})
            if isinstance(checkpoint := record.get("checkpoint"), str):
                names.setdefault("before", checkpoint)
                names["last"] = checkpoint
                names.pop("after", None)  # the turn went on (a resumed run)
            if isinstance(after := record.get("after"), str):
                names["after"] = after
        return found

    def plan(self, messages: Sequence[Message], number: int) -> Plan:
        """What going back to before turn ``number`` would do (nothing is changed yet)."""
        found = self.turns(messages)
        turn = found[number - 1]
        going = [t for t in found[number - 1:] if t.before is not None]
        count = len(messages) - turn.index
        if not going:
            return Plan(turn, count)
        with self._lock:
            now = self._scanner.scan()
        target = self.store.load(going[0].before or "")
        steps = changes(now, target)
        touched = {change.path for change in steps}
        edited: set[str] = set()
        for done, started in zip(going, [*going[1:], None], strict=True):
            end = self.store.load(done.last or "")
            begin = now if started is None else self.store.load(started.before or "")
            edited |= {change.path for change in changes(end, begin)} & touched
        not_kept = {**target.skipped, **now.skipped}
        return Plan(turn, count, steps, sorted(edited), not_kept, now, target)

    def apply(self, plan: Plan) -> list[str]:
        """Put the files of ``plan`` back (the messages are the caller's); what failed."""
        if plan.now is None or plan.target is None or not plan.changes:
            return []
        with self._lock:
            self._write({"rewound": self.store.save(plan.now),
                         "to": self.store.save(plan.target)})
            return restore(self.workspace, self.store, plan.now, plan.target)


def _log_records(log: Path) -> list[dict[str, Any]]:
    try:
        data = log.read_bytes()
    except FileNotFoundError:
        return []
    return [record for _, record in read_lines(data).lines if not isinstance(record, str)]


def recorded_workspace(folder: Path) -> Path | None:
    """The workspace the latest checkpoint in ``folder`` recorded (None: none did)."""
    for record in reversed(_log_records(folder / LOG)):
        if isinstance(workspace := record.get("workspace"), str):
            return Path(workspace)
    return None


def turns(messages: Sequence[Message],
          recorded: Mapping[tuple[int, str], Mapping[str, str]] | None = None) -> list[Turn]:
    """The turns of ``messages``, with the checkpoints ``recorded`` for each (by message
    index and time: see :class:`Checkpoints`)."""
    found: list[Turn] = []
    for index, message in enumerate(messages):
        if message.role != "user":
            continue
        names = (recorded or {}).get((index, message.timestamp.isoformat()), {})
        found.append(Turn(len(found) + 1, index, message.content, names.get("before"),
                          names.get("after"), names.get("after") or names.get("last")))
    return found


def _current_turn(history: Sequence[Message]) -> tuple[int, str] | None:
    """The index and time of the user message the call's turn began with."""
    for index in range(len(history) - 1, -1, -1):
        if history[index].role == "user":
            return index, history[index].timestamp.isoformat()
    return None

