"""Serving fencecall's tools to other programs: an MCP server over stdio or Streamable HTTP."""

from .mcp_server import SessionFactory, ToolServer, serve_http, serve_stdio

__all__ = ["SessionFactory", "ToolServer", "serve_http", "serve_stdio"]
