"""How a run is put together: its settings resolved once (:mod:`.settings`), then built
(:mod:`.build`). Every frontend (the command line, batch, MCP serving, editors) starts here."""

from .build import (
    Environment,
    agent,
    assemble,
    counter,
    environment,
    mcp_servers,
    own_secrets,
    provider,
    require_price,
    session,
    tool_session,
    toolchain,
)
from .settings import NO_MODEL, REPLY_SHARE, NoModel, Overrides, RunSettings, resolve

__all__ = [
    "NO_MODEL",
    "REPLY_SHARE",
    "Environment",
    "NoModel",
    "Overrides",
    "RunSettings",
    "agent",
    "assemble",
    "counter",
    "environment",
    "mcp_servers",
    "own_secrets",
    "provider",
    "require_price",
    "resolve",
    "session",
    "tool_session",
    "toolchain",
]
