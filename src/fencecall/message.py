"""Conversation messages: what models write and what tools answer."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any, Literal

Role = Literal["system", "user", "assistant"]


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

    def with_call_id(self, call_id: str | None) -> Message:
        return self if call_id is None or self.call_id == call_id else replace(
            self, call_id=call_id)


def system(content: str, **metadata: Any) -> Message:
    """A system message, the form every tool result and error takes."""
    return Message("system", content, metadata=metadata)
