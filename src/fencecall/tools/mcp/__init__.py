"""Tools from MCP servers: declared in the config (or with ``--mcp``), listed, called.

:class:`McpServers` turns declarations (:class:`McpServerConfig`) into ToolSpecs named
``SERVER.TOOL`` for :meth:`~fencecall.tools.Toolchain.build`, and gives every session its own
connection to each server it uses. Declarations import nothing heavy; the connection
machinery (asyncio, the MCP SDK) loads when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ._declaration import DeclarationError, McpServerConfig, from_command_line, from_table

if TYPE_CHECKING:
    from ._connection import McpConnection, McpServerError
    from .servers import McpServers, ServerState

_LAZY = {"McpConnection": "_connection", "McpServerError": "_connection",
         "McpServers": "servers", "ServerState": "servers"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "DeclarationError",
    "McpConnection",
    "McpServerConfig",
    "McpServerError",
    "McpServers",
    "ServerState",
    "from_command_line",
    "from_table",
]
