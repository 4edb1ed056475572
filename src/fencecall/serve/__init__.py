"""Serving fencecall's tools to other programs: an MCP server over stdio or Streamable HTTP.

The names below load the MCP SDK when first used, not when the package is imported (so
``fencecall.serve._guards`` alone imports no MCP).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from ._mcp_server import SessionFactory, ToolServer, serve_http, serve_stdio

_LAZY = frozenset({"SessionFactory", "ToolServer", "serve_http", "serve_stdio"})


def __getattr__(name: str) -> object:
    if name not in _LAZY:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    from . import _mcp_server

    value = getattr(_mcp_server, name)
    globals()[name] = value
    return value


__all__ = ["SessionFactory", "ToolServer", "serve_http", "serve_stdio"]
