"""Drive ``fencecall mcp serve`` with the official MCP client (``python examples/mcp_client.py``).

The server runs with ``-y``, so calls that need confirmation run; without it, only read-only
ones would (or the client's user is asked, where the client supports elicitation). Its
workspace is a temporary folder, removed at the end.
"""

import sys
import tempfile

import anyio
from mcp import Client, StdioServerParameters
from mcp.types import TextContent


async def main(workspace: str) -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fencecall.cli.main", "mcp", "serve", "-y", "--workspace", workspace,
              "--tools", "shell,read,save"])
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        print("tools:", ", ".join(tool.name for tool in tools))
        await client.call_tool("shell", {"command": "cd /tmp && export GREETING=hello"})
        result = await client.call_tool("shell", {"command": "echo $GREETING from $PWD"})
        for content in result.content:  # the session's shell kept its state
            print(content.text if isinstance(content, TextContent) else content)


with tempfile.TemporaryDirectory(prefix="fencecall-demo-") as folder:
    anyio.run(main, folder)
