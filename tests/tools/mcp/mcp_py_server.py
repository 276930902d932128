"""A small MCP server written with the official Python SDK, run by the MCP tests.

Usage: python mcp_py_server.py [stdio | http PORT | sse PORT]
"""

from __future__ import annotations

import asyncio
import os
import sys

import mcp_types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel, Field

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


class Booking(BaseModel):
    name: str = Field(description="who the table is for")
    seats: int = Field(default=2, description="how many people")


@server.tool()
async def book(day: str, ctx: Context) -> str:
    """Book a table, asking the user for the name (elicitation)."""
    answer = await ctx.elicit(f"Book a table on {day}: for whom?", Booking)
    if answer.action != "accept":
        return f"not booked ({answer.action})"
    return f"booked {answer.data.seats} seats on {day} for {answer.data.name}"


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Summarise a text with the client's model (sampling)."""
    result = await ctx.request_context.session.create_message(
        messages=[
            mcp_types.SamplingMessage(
                role="user", content=mcp_types.TextContent(type="text", text=f"Summarise: {text}")
            )
        ],
        max_tokens=50,
        system_prompt="You write one-line summaries.",
    )
    content = result.content
    return f"summary: {getattr(content, 'text', '')} (by {result.model})"


@server.tool()
async def countdown(steps: int, ctx: Context) -> str:
    """Count down, reporting progress and logging each step."""
    for done in range(1, steps + 1):
        await ctx.report_progress(done, steps, f"step {done}")
        await ctx.info(f"counted {done}")
    return "lift-off"


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
