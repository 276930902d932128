"""`raf mcp serve --transport http` guarded: a token beyond loopback, Host and Origin
checked on any address, sessions reachable only by the client they were issued to, and
approvals that cannot break a session."""

from __future__ import annotations

import asyncio
import json
import os
import queue
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

from raf.serve.limits import ServeLimits
from raf.serve.mcp.guard import allowed_host_names
from raf.serve.mcp.server import AgentMcpServer
from raf.serve.security import is_loopback
from raf.tools.mcp import McpClient
from tests.tools.peers import ROOT, free_port, serve

ECHO = "tests.tools.mcp_agent_factory:make_agent"
APPROVAL = "tests.tools.mcp_agent_factory:make_approval_agent"
SRC = str(Path(ROOT) / "src")
INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "1"},
    },
}


def _cmd(factory: str, *extra: str) -> list[str]:
    return [sys.executable, "-m", "raf.cli", "mcp", "serve", "--python", factory, *extra]


def _env(**extra: str) -> dict[str, str]:
    env = {"PYTHONPATH": os.pathsep.join([SRC, str(ROOT)])}
    env.update(extra)
    return env


@contextmanager
def _server(factory: str, *extra: str, **env: str) -> Iterator[int]:
    port = free_port()
    cmd = _cmd(factory, "--transport", "http", "--port", str(port), *extra)
    if "--host" not in extra:
        with serve(cmd, port, env=_env(**env)):
            yield port
        return
    host = extra[extra.index("--host") + 1]
    proc = subprocess.Popen(cmd, env={**os.environ, **_env(**env)}, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            assert proc.poll() is None, "the server exited early"
            try:
                socket.create_connection((host, port), 0.5).close()
                break
            except OSError:
                assert time.monotonic() < deadline, f"nothing listened on {host}:{port}"
                time.sleep(0.1)
        yield port
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def _post(url: str, headers: dict[str, str]) -> int:
    request = urllib.request.Request(
        url,
        data=json.dumps(INIT).encode(),
        method="POST",
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_beyond_loopback_without_a_token_it_refuses_to_start() -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if k != "RAF_MCP_TOKEN"}
    env.update(_env())
    done = subprocess.run(
        _cmd(ECHO, "--transport", "http", "--host", "0.0.0.0", "--port", str(port)),
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode != 0
    assert "without a bearer token" in done.stderr and "RAF_MCP_TOKEN" in done.stderr
    assert "Traceback" not in done.stderr


def test_a_token_is_required_on_every_request_when_set() -> None:
    with _server(ECHO, RAF_MCP_TOKEN="s3cret-token-0123456") as port:
        url = f"http://127.0.0.1:{port}/mcp"
        assert _post(url, {}) == 401
        assert _post(url, {"Authorization": "Bearer wrong"}) == 401
        assert _post(url, {"Authorization": "Bearer s3cret-token-0123456"}) == 200


def test_an_address_past_its_wrong_tokens_gets_429_before_its_token_is_read() -> None:
    """Ten wrong tokens (the default) from one address, then 429 with Retry-After, the
    right token from there too; another address (loopback counts as any) goes on."""
    import httpx

    def client(source: str, token: str) -> httpx.Client:
        return httpx.Client(
            transport=httpx.HTTPTransport(local_address=source),
            headers={
                "authorization": f"Bearer {token}",
                "accept": "application/json, text/event-stream",
            },
            timeout=30,
        )

    with (
        _server(ECHO, RAF_MCP_TOKEN="s3cret-token-0123456") as port,
        client("127.0.0.2", "wrong") as guesser,
        client("127.0.0.2", "s3cret-token-0123456") as same_place,
        client("127.0.0.1", "s3cret-token-0123456") as elsewhere,
    ):
        url = f"http://127.0.0.1:{port}/mcp"
        statuses = [guesser.post(url, json=INIT).status_code for _ in range(12)]
        assert statuses == [401] * 10 + [429] * 2
        barred = guesser.post(url, json=INIT)
        assert int(barred.headers["retry-after"]) >= 1
        assert "too many failed authentications from this address (127.0.0.2)" in barred.text
        assert same_place.post(url, json=INIT).status_code == 429
        assert elsewhere.post(url, json=INIT).status_code == 200


async def test_the_right_token_lets_a_real_client_ask() -> None:
    with _server(ECHO, RAF_MCP_TOKEN="t0ken-0123456789ab") as port:
        client = McpClient(
            {
                "name": "with-token",
                "url": f"http://127.0.0.1:{port}/mcp",
                "headers": {"Authorization": "Bearer t0ken-0123456789ab"},
            }
        )
        try:
            result = await client.call_tool("ask", {"message": "hi"})
            assert result.content[0].text == "turn 1: you said 'hi'"  # type: ignore[union-attr]
        finally:
            await client.aclose()


def test_host_and_origin_are_checked_on_a_non_default_address() -> None:
    with _server(ECHO, "--host", "127.0.0.2") as port:
        url = f"http://127.0.0.2:{port}/mcp"
        assert _post(url, {"Host": "evil.example"}) == 403  # `raf serve`'s guard's answer
        assert _post(url, {"Origin": "http://evil.example"}) == 403
        assert _post(url, {"Host": f"127.0.0.2:{port}"}) == 200
        assert _post(url, {"Origin": f"http://localhost:{port}"}) == 200


async def test_a_client_reaches_only_the_sessions_issued_to_it() -> None:
    with _server(ECHO) as port:
        url = f"http://127.0.0.1:{port}/mcp"
        alice = McpClient({"name": "alice", "url": url})
        mallory = McpClient({"name": "mallory", "url": url})
        try:
            first = await alice.call_tool("ask", {"message": "my secret plan"})
            assert first.structured_content is not None
            issued = first.structured_content["session_id"]
            assert len(issued) >= 20
            again = await alice.call_tool("ask", {"message": "and more", "session_id": issued})
            assert again.content[0].text == "turn 2: you said 'and more'"  # type: ignore[union-attr]
            for guess in ("team", "default", "1", issued[:-1]):
                peek = await mallory.call_tool("ask", {"message": "what?", "session_id": guess})
                assert peek.is_error and "unknown session_id" in peek.content[0].text  # type: ignore[union-attr]
            own = await mallory.call_tool("ask", {"message": "mine"})
            assert own.content[0].text == "turn 1: you said 'mine'"  # type: ignore[union-attr]
            assert own.structured_content is not None
            assert own.structured_content["session_id"] != issued
        finally:
            await alice.aclose()
            await mallory.aclose()


async def test_a_call_needing_approval_does_not_break_later_asks() -> None:
    with _server(APPROVAL) as port:
        client = McpClient({"name": "c", "url": f"http://127.0.0.1:{port}/mcp"})
        try:
            first = await client.call_tool("ask", {"message": "delete it"})
            assert not first.is_error
            text = first.content[0].text  # type: ignore[union-attr]
            # raf's client, given no way to ask a person, declines the server's form
            assert text.startswith("not deleted:") and "did not approve (decline)" in text
            assert first.structured_content is not None
            assert first.structured_content["denied"] == ["delete_everything"]
            issued = first.structured_content["session_id"]
            later = await client.call_tool("ask", {"message": "hello", "session_id": issued})
            assert not later.is_error, later.content
            assert later.content[0].text == "turn 2: you said 'hello'"  # type: ignore[union-attr]
        finally:
            await client.aclose()


def test_which_addresses_count_as_loopback() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("127.0.0.2") and is_loopback("::1")
    assert is_loopback("localhost") and not is_loopback("0.0.0.0")
    assert not is_loopback("192.168.1.5") and not is_loopback("example.com")
    assert "api.example.com" in allowed_host_names("0.0.0.0", ["api.example.com"])
    assert "0.0.0.0" not in allowed_host_names("0.0.0.0")


@contextmanager
def _serving_in_thread(server: AgentMcpServer, limits: ServeLimits) -> Iterator[int]:
    """`server.serve_http` on a free loopback port, on an event loop of its own thread;
    its port. Cancelled on leaving (the thread joined within 20 s)."""
    loop = asyncio.new_event_loop()
    urls: queue.Queue[str] = queue.Queue()
    serving = loop.create_task(server.serve_http(port=0, ready=urls.put, limits=limits))

    def main() -> None:
        with suppress(asyncio.CancelledError):
            loop.run_until_complete(serving)

    thread = threading.Thread(target=main, name="mcp-serve", daemon=True)
    thread.start()
    try:
        url = urls.get(timeout=30)
        yield int(url.rsplit(":", 1)[1].split("/", 1)[0])
    finally:
        loop.call_soon_threadsafe(serving.cancel)
        thread.join(timeout=20)
        assert not thread.is_alive(), "the MCP server did not stop"
        loop.close()


def test_half_sent_headers_are_dropped_by_the_mcp_server_too() -> None:
    """The MCP server's HTTP has `raf serve`'s guard on heads: one left half-sent is
    dropped after the header deadline (`raf mcp serve` keeps the default, 10 s; here
    half a second, through the limits `serve_http` takes, so the test does not wait 10 s)."""
    from tests.tools.mcp_agent_factory import make_agent

    limits = ServeLimits(header_timeout=0.5)
    with (
        _serving_in_thread(AgentMcpServer(make_agent()), limits) as port,
        socket.create_connection(("127.0.0.1", port), 30) as half,
    ):
        half.sendall(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        # closed after the header deadline (the wait is bounded by the timeout)
        half.settimeout(limits.header_timeout + 20)
        with suppress(ConnectionResetError):
            assert half.recv(4096) == b""
