"""The telemetry interface, and the no-op telemetry that runs when it is off."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager


class ToolRun:
    """One tool call being measured; :meth:`end` closes it."""

    def end(self, outcome: str, error_type: str | None, result: str | None = None) -> None:
        """``outcome`` is ``ok`` or the call's status; ``error_type`` names a failure;
        ``result`` (redacted) is given only to a telemetry that records content."""


class ChatRun:
    """One model request being measured; :meth:`end` closes it."""

    def end(self, *, finish_reason: str | None = None, usage: Mapping[str, int] | None = None,
            error_type: str | None = None, counted: str | None = None,
            cost_usd: float | None = None) -> None:
        """How the request ended: its stop reason and token usage (``counted`` says how
        fencecall counted a usage the provider did not report), its cost, or the error's
        type."""


_NO_TOOL = ToolRun()
_NO_CHAT = ChatRun()


class Telemetry:
    """Records nothing, at the cost of a method call: the default."""

    records_content = False
    """Whether tool arguments and results go into spans (only when the user opts in)."""

    def tool(self, name: str, *, call_id: str | None, description: str, fmt: str,
             langtag: str | None, arguments: str | None = None) -> ToolRun:
        return _NO_TOOL

    def chat(self, model: str, *, provider: str, url: str | None) -> ChatRun:
        return _NO_CHAT

    @contextmanager
    def turn(self, model: str) -> Iterator[None]:
        """Around one user turn (``invoke_agent``): its model requests and tool calls."""
        yield

    def shutdown(self) -> None:
        """Export what is pending (at most the exporters' timeouts) and stop."""
