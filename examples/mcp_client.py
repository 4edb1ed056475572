"""Drive ``fencecall mcp serve`` with the official MCP client (``python examples/mcp_client.py``).

The server runs with ``-y``, so calls that need confirmation run; without it, only read-only
ones would (or the client's user is asked, where the client supports elicitation).
"""

import sys

import anyio
from mcp import Client, StdioServerParameters


async def main() -> None:
    server = StdioServerParameters(
        command=sys.executable,
        args=["-m", "fencecall.cli.main", "mcp", "serve", "-y", "--workspace",
              "/tmp/fencecall-demo", "--tools", "shell,read,save"])
    async with Client(server) as client:
        tools = (await client.list_tools()).tools
        print("tools:", ", ".join(tool.name for tool in tools))
        await client.call_tool("shell", {"command": "cd /tmp && export GREETING=hello"})
        result = await client.call_tool("shell", {"command": "echo $GREETING from $PWD"})
        print(result.content[0].text)  # the session's shell kept its state


anyio.run(main)
