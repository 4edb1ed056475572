"""Conversation messages: what models write and what tools answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]
FAILED_STATUSES = frozenset({"error", "blocked", "declined", "interrupted"})


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
    def failed(self) -> bool:
        """Whether this tool result reports a call that did not do its job."""
        return self.metadata.get("status") in FAILED_STATUSES


def system(content: str, **metadata: Any) -> Message:
    """A system message, the form every tool result and error takes."""
    return Message("system", content, metadata=metadata)
