"""How a run is put together: its settings resolved once (:mod:`._settings`), then built
(:mod:`.build`). Every frontend (the command line, batch, MCP serving, editors) starts here,
and so does a program that wants the agent the command line would build
(:func:`agent_from_config`)."""

from typing import TYPE_CHECKING

from .._lazy import lazy_names

if TYPE_CHECKING:
    from ._configured import ConfiguredAgent, agent_from_config
    from ._places import start_environment
    from ._run_settings import (
        NO_MODEL,
        REPLY_SHARE,
        NoModel,
        Overrides,
        RunSettings,
        merge,
        resolve_settings,
    )
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
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._configured": ("ConfiguredAgent", "agent_from_config"),
        "._places": ("start_environment",),
        "._run_settings": ("NO_MODEL", "REPLY_SHARE", "NoModel", "Overrides", "RunSettings",
                           "merge", "resolve_settings"),
        ".build": ("Environment", "agent", "assemble", "counter", "environment", "mcp_servers",
                   "own_secrets", "provider", "require_price", "session", "tool_session",
                   "toolchain"),
    })

__all__ = [
    "NO_MODEL",
    "REPLY_SHARE",
    "ConfiguredAgent",
    "Environment",
    "NoModel",
    "Overrides",
    "RunSettings",
    "agent",
    "agent_from_config",
    "assemble",
    "counter",
    "environment",
    "mcp_servers",
    "merge",
    "own_secrets",
    "provider",
    "require_price",
    "resolve_settings",
    "session",
    "start_environment",
    "tool_session",
    "toolchain",
]
