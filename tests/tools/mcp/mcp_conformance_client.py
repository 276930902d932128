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

import httpx2

from raf.tools.mcp import ElicitationAnswer, ElicitationRequest, McpClient
from raf.tools.mcp.oauth import AuthorizationResult, result_from_redirect

ARGUMENTS: dict[str, dict[str, Any]] = {"add_numbers": {"a": 5, "b": 3}}
"""Arguments for the scenario tools that take some."""

CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


async def accept_as_offered(request: ElicitationRequest) -> ElicitationAnswer:
    """A user who accepts every form as it is offered (raf fills in the defaults)."""
    print(f"elicitation: {request.describe()}", file=sys.stderr)
    return ElicitationAnswer(action="accept", content={})


async def headless_authorizer(authorization_url: str, redirect_uri: str) -> AuthorizationResult:
    """A person who approves at once: the suite's authorization server redirects straight
    back, so the code is read from the redirect without a browser."""
    async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
        response = await http.get(authorization_url)
    location = response.headers.get("location")
    if response.status_code not in (301, 302, 303, 307, 308) or not location:
        raise RuntimeError(f"the authorization endpoint answered {response.status_code}")
    return result_from_redirect(location)


def oauth_config(context: dict[str, Any]) -> dict[str, Any]:
    """OAuth settings: pre-registered credentials when the scenario gives them, and the
    client metadata document the suite knows (used where the server accepts URL ids)."""
    oauth: dict[str, Any] = {
        "client_name": "raf conformance client",
        "client_metadata_url": CLIENT_METADATA_URL,
    }
    if context.get("client_id"):
        oauth["client_id"] = context["client_id"]
        oauth["client_secret"] = context.get("client_secret")
    return oauth


async def main(url: str) -> int:
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context: dict[str, Any] = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    print(f"scenario {scenario!r}, context keys {sorted(context)}", file=sys.stderr)
    config: dict[str, Any] = {"name": "conformance", "url": url, "call_timeout": 20}
    if scenario.startswith("auth/"):
        config["oauth"] = oauth_config(context)
        # the suite's authorization server listens on another local port than the MCP
        # server: raf's outbound guard reaches it only when the host is listed
        config["allow_hosts"] = ["localhost", "127.0.0.1"]
    client = McpClient(config, elicitation=accept_as_offered, authorizer=headless_authorizer)
    try:
        for spec in await client.list_tools():
            result = await client.call_tool(spec.name, ARGUMENTS.get(spec.name, {}))
            print(f"{spec.name}: {result.model_dump(mode='json')}", file=sys.stderr)
    finally:
        await client.aclose()
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main(sys.argv[-1])))
