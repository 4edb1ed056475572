"""The smallest MCP server: one echo tool, for measuring per-call overhead."""

from mcp.server.mcpserver import MCPServer
from mcp.types import ToolAnnotations

server = MCPServer("echo")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def echo(text: str) -> str:
    """Say the text back."""
    return text


if __name__ == "__main__":
    server.run()
