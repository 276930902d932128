"""A small MCP server written with the official Python SDK, run by the MCP tests.

Usage: python mcp_py_server.py [stdio | http PORT | sse PORT]
"""

from __future__ import annotations

import asyncio
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("py-test-server", instructions="A Python test server with notes.")

NOTES: dict[str, str] = {"welcome": "Hello from the Python MCP server."}


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def fail(reason: str) -> str:
    """Always fails with the given reason."""
    raise ToolError(f"refused: {reason}")


@server.tool()
async def sleep(seconds: float) -> str:
    """Sleep, to exercise timeouts."""
    await asyncio.sleep(seconds)
    return "slept"


@server.tool()
def crash() -> str:
    """Kill the server process, to exercise reconnection."""
    os._exit(3)


@server.tool()
def pid() -> int:
    """The server's process id."""
    return os.getpid()


@server.resource("notes://welcome", name="welcome", description="The welcome note")
def welcome() -> str:
    return NOTES["welcome"]


@server.prompt()
def review(topic: str) -> str:
    """Ask for a careful review of a topic."""
    return f"Please review {topic} carefully."


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "stdio"
    if mode == "stdio":
        server.run("stdio")
    elif mode == "http":
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        server.run("sse", host="127.0.0.1", port=int(sys.argv[2]))
