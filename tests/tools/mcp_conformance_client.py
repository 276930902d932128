"""raf's MCP client as the official conformance suite runs it: `python THIS URL`.

The suite starts a test server for one scenario, names it in $MCP_CONFORMANCE_SCENARIO
(with scenario data such as pre-registered credentials in $MCP_CONFORMANCE_CONTEXT) and
judges what this program does against that server: connect, list the tools and call
each one, as an agent would.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from raf.tools.mcp import ElicitationAnswer, ElicitationRequest, McpClient

ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}
"""Arguments for the scenario tools that take some."""


async def accept_as_offered(request: ElicitationRequest) -> ElicitationAnswer:
    """A user who accepts every form as it is offered (raf fills in the defaults)."""
    print(f"elicitation: {request.describe()}", file=sys.stderr)
    return ElicitationAnswer(action="accept", content={})


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    print(f"scenario {scenario!r}, context keys {sorted(context)}", file=sys.stderr)
    config: dict[str, Any] = {"name": "conformance", "url": url, "call_timeout": 20}
    client = McpClient(config, elicitation=accept_as_offered)
    try:
        for spec in await client.list_tools():
            result = await client.call_tool(spec.name, ARGUMENTS.get(spec.name, {}))
            print(f"{spec.name}: {result.model_dump(mode='json')}", file=sys.stderr)
    finally:
        await client.aclose()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
