"""Conversation messages: what models write and what tools answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]


class Status(StrEnum):
    """How a tool call ended when it did not simply succeed (``metadata["status"]``)."""

    ERROR = "error"
    """The tool failed, or the call could not be understood."""
    BLOCKED = "blocked"
    """A hook stopped it."""
    DECLINED = "declined"
    """The user did not confirm it."""
    INTERRUPTED = "interrupted"
    """The user stopped it (Ctrl-C), or an earlier interrupt kept it from starting."""
    STEP_LIMIT = "step-limit"
    """Not a call's status: the agent stopped at its step limit."""
    GAVE_UP = "gave-up"
    """Not a call's status: the agent stopped because reply after reply held calls that
    could not run (near misses, malformed calls) or looped."""


_STATUSES = frozenset(status.value for status in Status)
FAILED_STATUSES = frozenset({Status.ERROR, Status.BLOCKED, Status.DECLINED, Status.INTERRUPTED})


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class Message:
    """One message. Tool results are ``system`` messages tagged with the call's ``call_id``."""

    role: Role
    content: str
    call_id: str | None = None
    timestamp: datetime = field(default_factory=_now)
    metadata: Mapping[str, Any] = field(default_factory=dict)

    def tagged(self, call_id: str | None, tool: str) -> Message:
        """This message as the result of call ``call_id`` of ``tool``."""
        return replace(self, call_id=call_id if call_id is not None else self.call_id,
                       metadata={**self.metadata, "tool": tool})

    @property
    def status(self) -> Status | None:
        """The call's status, if it did not simply succeed."""
        value = self.metadata.get("status")
        return Status(value) if isinstance(value, str) and value in _STATUSES else None

    @property
    def failed(self) -> bool:
        """Whether this tool result reports a call that did not do its job."""
        return self.status in FAILED_STATUSES


def system(content: str, status: Status | None = None, **metadata: Any) -> Message:
    """A system message, the form every tool result and error takes."""
    if status is not None:
        metadata["status"] = status
    return Message("system", content, metadata=metadata)
