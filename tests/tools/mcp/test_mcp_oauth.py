"""raf's MCP client against a real OAuth-protected MCP server (the Python SDK's, on
loopback): authorization with PKCE, tokens kept in memory or in a 0600 file, refresh when
the access token expires, and no token in any error or `repr`."""

from __future__ import annotations

import asyncio
import json
import logging
import stat
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from raf.core.errors import ConfigurationError
from raf.tools.mcp import McpClient, McpError
from raf.tools.mcp.oauth import (
    AuthorizationResult,
    FileTokenStore,
    MemoryTokenStore,
    guard_sdk_logs,
    result_from_redirect,
)

from ..peers import free_port, serve

SERVER = Path(__file__).with_name("mcp_oauth_server.py")


class Authorizer:
    """A person who approves every request at once; counts how often they were asked."""

    def __init__(self) -> None:
        self.asked = 0

    async def __call__(self, authorization_url: str, redirect_uri: str) -> AuthorizationResult:
        self.asked += 1
        assert "code_challenge_method=S256" in authorization_url
        async with httpx2.AsyncClient(follow_redirects=False, timeout=10) as http:
            response = await http.get(authorization_url)
        assert response.status_code == 302, response.text
        location = response.headers["location"]
        assert location.startswith(redirect_uri)
        return result_from_redirect(location)


def _config(port: int, **oauth: Any) -> dict[str, Any]:
    return {"name": "secured", "url": f"http://127.0.0.1:{port}/mcp", "oauth": oauth}


async def _whoami(client: McpClient) -> str:
    result = await client.call_tool("whoami", {})
    assert result.structured_content is not None
    return str(result.structured_content["result"])


async def test_authorizes_once_and_keeps_the_tokens_in_a_private_file(tmp_path: Path) -> None:
    port = free_port()
    tokens = tmp_path / "secrets" / "tokens.json"
    with serve([sys.executable, str(SERVER), str(port)], port):
        person = Authorizer()
        first = McpClient(_config(port, token_file=str(tokens)), authorizer=person)
        try:
            assert await _whoami(first) == "issued 1, refreshed 0"
        finally:
            await first.aclose()
        assert person.asked == 1
        assert stat.S_IMODE(tokens.stat().st_mode) == 0o600
        saved = json.loads(tokens.read_text(encoding="utf-8"))
        assert saved["tokens"]["access_token"].startswith("at-")
        assert saved["client"]["client_id"]
        # A new client (a new process) finds the tokens and asks nobody.
        second = McpClient(_config(port, token_file=str(tokens)), authorizer=person)
        try:
            assert await _whoami(second) == "issued 1, refreshed 0"
        finally:
            await second.aclose()
        assert person.asked == 1
        assert str(tokens) in repr(FileTokenStore(tokens))
        assert saved["tokens"]["access_token"] not in repr(FileTokenStore(tokens))


async def test_an_expired_token_is_refreshed_without_asking_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    port = free_port()
    with serve([sys.executable, str(SERVER), str(port), "1"], port):
        person = Authorizer()
        store = MemoryTokenStore()
        client = McpClient(_config(port), authorizer=person, token_store=store)
        try:
            assert await _whoami(client) == "issued 1, refreshed 0"
            first = await store.get_tokens()
            await asyncio.sleep(2.2)  # the access token lives one second
            await client.aclose()  # a new connection must present a valid token
            assert await _whoami(client) == "issued 2, refreshed 1"
            second = await store.get_tokens()
        finally:
            await client.aclose()
        assert person.asked == 1
        assert first is not None and second is not None
        assert first.access_token != second.access_token
        assert first.access_token not in repr(store)
        for token in (first, second):
            assert token.access_token not in caplog.text
            assert token.refresh_token and token.refresh_token not in caplog.text


async def test_a_refused_authorization_is_a_clear_error_without_secrets() -> None:
    port = free_port()

    async def refuse(authorization_url: str, redirect_uri: str) -> AuthorizationResult:
        return result_from_redirect(f"{redirect_uri}?error=access_denied&state=x")

    with serve([sys.executable, str(SERVER), str(port)], port):
        client = McpClient(_config(port, client_secret="never-shown"), authorizer=refuse)
        try:
            with pytest.raises(McpError, match="access_denied") as caught:
                await client.list_tools()
        finally:
            await client.aclose()
    assert "never-shown" not in str(caught.value)


def test_oauth_needs_a_remote_server_and_a_known_key() -> None:
    with pytest.raises(ConfigurationError, match="not stdio"):
        McpClient({"command": "x", "oauth": {}})
    with pytest.raises(ConfigurationError, match="oauth.scope: Extra inputs"):
        McpClient({"url": "http://127.0.0.1:1/mcp", "oauth": {"scope": "a"}})


def test_the_sdk_oauth_log_keeps_no_parse_error_details(caplog: pytest.LogCaptureFixture) -> None:
    guard_sdk_logs()
    sdk = logging.getLogger("mcp.client.auth.oauth2")
    try:
        raise ValueError(
            "1 validation error for OAuthToken\n  input_value={'access_token': 'tok-123'}"
        )
    except ValueError:
        with caplog.at_level(logging.DEBUG, logger="mcp.client.auth.oauth2"):
            sdk.exception("Invalid refresh response: %s", "details follow\nrefresh_token=tok-456")
    assert "Invalid refresh response: details follow" in caplog.text
    assert "tok-123" not in caplog.text and "tok-456" not in caplog.text
