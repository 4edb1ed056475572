"""Telemetry: a span per tool call, per model request and per user turn, and their metrics.

Off by default, and then free: the no-op :class:`Telemetry` below is what runs. With
``FENCECALL_TELEMETRY=1`` (or ``telemetry = true`` in the config) the CLI installs the
OpenTelemetry one (:mod:`fencecall.telemetry._otel`, the ``otel`` extra), configured only by the
standard ``OTEL_*`` variables. Importing fencecall never imports opentelemetry. The
telemetry in use is scoped by a ContextVar, so two sessions in one process can differ.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar

from ._base import ChatRun, Telemetry, ToolRun

__all__ = ["NO_TELEMETRY", "ChatRun", "Telemetry", "ToolRun", "current", "from_settings",
           "using", "wanted"]


NO_TELEMETRY = Telemetry()
_current: ContextVar[Telemetry] = ContextVar("fencecall_telemetry", default=NO_TELEMETRY)


def current() -> Telemetry:
    """The telemetry of this context."""
    return _current.get()


@contextmanager
def using(telemetry: Telemetry) -> Iterator[Telemetry]:
    """Use ``telemetry`` in this context, and shut it down afterwards."""
    token = _current.set(telemetry)
    try:
        yield telemetry
    finally:
        _current.reset(token)
        telemetry.shutdown()


def wanted(env: Mapping[str, str], configured: bool) -> bool:
    """Whether the user asked for telemetry (the environment wins over the config)."""
    return _flag(env, "FENCECALL_TELEMETRY", configured)


def _flag(env: Mapping[str, str], name: str, configured: bool) -> bool:
    value = env.get(name)
    if value is not None:
        return value.strip().lower() in ("1", "true", "yes", "on")
    return configured


def from_settings(configured: bool, env: Mapping[str, str] | None = None, *,
                  content: bool = False) -> Telemetry:
    """OpenTelemetry if asked for and installed; otherwise nothing (saying why once).
    Tool arguments and results are recorded only with ``content`` (``telemetry_content``) or
    ``FENCECALL_TELEMETRY_CONTENT=1``."""
    env = os.environ if env is None else env
    if not wanted(env, configured):
        return NO_TELEMETRY
    try:
        from ._otel import OtelTelemetry
    except ImportError:
        print("fencecall: warning: telemetry is on but OpenTelemetry is not installed; "
              "pip install 'fencecall[otel]'", file=sys.stderr)
        return NO_TELEMETRY
    return OtelTelemetry.configured(content=_flag(env, "FENCECALL_TELEMETRY_CONTENT", content))
