"""`raf mcp serve` on the host every surface runs on: sessions kept in the store it is
given (a restart continues a conversation), one run at a time per session (a second ask
refused or queued as `--if-busy` says), and each bearer token its own tenant."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from raf.tools.mcp import McpClient
from tests.serve.mcp.test_mcp_serve_http import ECHO, _cmd, _env
from tests.tools.mcp_agent_factory import GATE_ENV
from tests.tools.peers import free_port, serve

GATED = "tests.tools.mcp_agent_factory:make_gated_agent"
TOKEN_A = "token-of-alice-0123456789"
TOKEN_B = "token-of-bob-0123456789ab"


@contextmanager
def _mcp(factory: str, *extra: str, **env: str) -> Iterator[str]:
    port = free_port()
    with serve(
        _cmd(factory, "--transport", "http", "--port", str(port), *extra), port, env=_env(**env)
    ):
        yield f"http://127.0.0.1:{port}/mcp"


def _client(url: str, token: str | None = None) -> McpClient:
    spec: dict[str, Any] = {"name": "c", "url": url}
    if token is not None:
        spec["headers"] = {"Authorization": f"Bearer {token}"}
    return McpClient(spec)


def _text(result: Any) -> str:
    return str(result.content[0].text)


async def test_sessions_in_sqlite_outlive_a_restart(tmp_path: Path) -> None:
    store = tmp_path / "mcp-sessions.sqlite"
    with _mcp(ECHO, "--sessions", str(store)) as url:
        client = _client(url)
        try:
            first = await client.call_tool("ask", {"message": "remember me"})
            assert _text(first) == "turn 1: you said 'remember me'"
            issued = first.structured_content["session_id"]
        finally:
            await client.aclose()
    with _mcp(ECHO, "--sessions", f"sqlite:///{store}") as url:  # the same file, as a URL
        client = _client(url)
        try:
            again = await client.call_tool("ask", {"message": "still here?", "session_id": issued})
            assert not again.is_error, _text(again)
            assert _text(again) == "turn 2: you said 'still here?'"
        finally:
            await client.aclose()


async def test_without_a_store_a_restart_forgets_the_sessions() -> None:
    """The default is memory: the same steps as above end in an unknown session."""
    with _mcp(ECHO) as url:
        client = _client(url)
        try:
            first = await client.call_tool("ask", {"message": "remember me"})
            issued = first.structured_content["session_id"]
        finally:
            await client.aclose()
    with _mcp(ECHO) as url:
        client = _client(url)
        try:
            again = await client.call_tool("ask", {"message": "hi", "session_id": issued})
            assert again.is_error and "unknown session_id" in _text(again)
        finally:
            await client.aclose()


async def _started(gate: Path) -> None:
    """Wait (bounded) until the gated agent's run is in progress."""
    deadline = time.monotonic() + 60
    while not Path(f"{gate}.started").exists():
        assert time.monotonic() < deadline, "the first ask never started"
        await asyncio.sleep(0.05)


async def _busy_session(url: str, gate: Path) -> tuple[McpClient, str, asyncio.Task[Any]]:
    """A session whose second ask ('wait') holds its run until `gate` exists."""
    first = _client(url)
    opened = await first.call_tool("ask", {"message": "hello"})
    issued = str(opened.structured_content["session_id"])
    waiting = asyncio.ensure_future(
        first.call_tool("ask", {"message": "wait", "session_id": issued})
    )
    await _started(gate)
    return first, issued, waiting


async def test_a_second_ask_on_a_busy_session_is_refused(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with _mcp(GATED, **{GATE_ENV: str(gate)}) as url:
        first, issued, waiting = await _busy_session(url, gate)
        second = _client(url)
        try:
            busy = await second.call_tool("ask", {"message": "me too", "session_id": issued})
            assert busy.is_error
            assert _text(busy).startswith(f"session_busy: session {issued!r} has a run in progress")
            gate.write_text("open", encoding="utf-8")
            done = await asyncio.wait_for(waiting, 60)
            assert _text(done) == "turn 2: you said 'wait'"
            later = await second.call_tool("ask", {"message": "now", "session_id": issued})
            assert _text(later) == "turn 3: you said 'now'"  # the refused ask left no turn
        finally:
            gate.write_text("open", encoding="utf-8")
            await first.aclose()
            await second.aclose()


async def test_with_if_busy_enqueue_a_second_ask_waits_its_turn(tmp_path: Path) -> None:
    gate = tmp_path / "gate"
    with _mcp(GATED, "--if-busy", "enqueue", **{GATE_ENV: str(gate)}) as url:
        first, issued, waiting = await _busy_session(url, gate)
        second = _client(url)
        try:
            queued = asyncio.ensure_future(
                second.call_tool("ask", {"message": "after you", "session_id": issued})
            )
            await asyncio.sleep(1)  # let it reach the queue (were it late, it would still pass)
            assert not queued.done()
            gate.write_text("open", encoding="utf-8")
            done = await asyncio.wait_for(waiting, 60)
            assert _text(done) == "turn 2: you said 'wait'"
            after = await asyncio.wait_for(queued, 60)
            assert not after.is_error, _text(after)
            assert _text(after) == "turn 3: you said 'after you'"
        finally:
            gate.write_text("open", encoding="utf-8")
            await first.aclose()
            await second.aclose()


async def test_a_session_issued_to_one_token_is_unknown_to_another() -> None:
    with _mcp(ECHO, RAF_MCP_TOKEN=f"{TOKEN_A},{TOKEN_B}") as url:
        alice, bob = _client(url, TOKEN_A), _client(url, TOKEN_B)
        try:
            first = await alice.call_tool("ask", {"message": "my secret plan"})
            issued = first.structured_content["session_id"]
            peek = await bob.call_tool("ask", {"message": "what?", "session_id": issued})
            assert peek.is_error and "unknown session_id" in _text(peek)
            own = await bob.call_tool("ask", {"message": "mine"})
            assert _text(own) == "turn 1: you said 'mine'"
            again = await alice.call_tool("ask", {"message": "and more", "session_id": issued})
            assert _text(again) == "turn 2: you said 'and more'"  # bob's try left no turn
        finally:
            await alice.aclose()
            await bob.aclose()
