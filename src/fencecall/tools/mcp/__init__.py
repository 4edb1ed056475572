"""Tools from MCP servers: declared in the config (or with ``--mcp``), listed, called.

:class:`McpServers` turns declarations (:class:`McpServerConfig`) into ToolSpecs named
``SERVER.TOOL`` for :meth:`~fencecall.tools.Toolchain.build`, and gives every session its own
connection to each server it uses. Declarations import nothing heavy; the connection
machinery (asyncio, the MCP SDK) loads when first asked for.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..._lazy import lazy_names

if TYPE_CHECKING:
    from ._connection import McpConnection, McpServerError
    from ._declaration import DeclarationError, McpServerConfig, from_command_line, from_table
    from .servers import McpServers, ServerState
else:
    __getattr__, __dir__ = lazy_names(__name__, {
        "._connection": ("McpConnection", "McpServerError"),
        "._declaration": ("DeclarationError", "McpServerConfig", "from_command_line",
                          "from_table"),
        ".servers": ("McpServers", "ServerState"),
    })

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
