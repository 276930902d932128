"""McpClient and McpToolset against real MCP servers: a Python SDK server and the npm
reference servers, over stdio, streamable HTTP and SSE."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import time
from pathlib import Path

import pytest

from raf.core.errors import ConfigurationError
from raf.core.tools import ApprovalRequiredTool, ToolContext
from raf.tools.mcp import McpClient, McpError, McpServerConfig, McpToolset

from ..peers import free_port, node_loopback_env, npm_bin, py_server_cmd, serve


def py_config(**extra: object) -> McpServerConfig:
    cmd = py_server_cmd()
    return McpServerConfig.model_validate(
        {"name": "py", "command": cmd[0], "args": cmd[1:], "call_timeout": 20, **extra}
    )


def test_config_infers_and_checks_transport() -> None:
    assert McpServerConfig(command="x").transport == "stdio"
    assert McpServerConfig(url="http://127.0.0.1:1/mcp").transport == "http"
    with pytest.raises(ValueError, match="needs either"):
        McpServerConfig()
    with pytest.raises(ValueError, match="needs 'url'"):
        McpServerConfig(transport="sse", command="x")
    cfg = McpServerConfig(command="x", approval_mode={"rm": "always"}, tool_prefix="fs")
    assert cfg.needs_approval("rm") and not cfg.needs_approval("ls")
    assert cfg.exposed_name("ls") == "fs_ls"
    # A mapping (what users and documents pass) fails as a RafError naming key and server.
    with pytest.raises(ConfigurationError, match="'fs' config: comand: Extra inputs"):
        McpClient({"name": "fs", "comand": "npx"})
    with pytest.raises(ConfigurationError, match="call_timeout: Input should be greater"):
        McpClient({"command": "x", "call_timeout": 0})
    with pytest.raises(ConfigurationError, match="got str"):
        McpClient("npx")  # type: ignore[arg-type]


async def test_python_server_over_stdio() -> None:
    client = McpClient(py_config())
    assert not client.connected  # lazy: nothing started yet
    try:
        names = [t.name for t in await client.list_tools()]
        assert client.connected
        assert {"add", "fail", "sleep", "pid"} <= set(names)
        result = await client.call_tool("add", {"a": 2, "b": 40})
        assert not result.is_error and result.structured_content == {"result": 42}
        resources = await client.list_resources()
        assert [str(r.uri) for r in resources] == ["notes://welcome"]
        read = await client.read_resource("notes://welcome")
        assert "Hello from the Python MCP server" in read.contents[0].text
        prompt = await client.get_prompt("review", {"topic": "the budget"})
        assert "review the budget" in str(prompt.messages[0].content)
        assert client.server_instructions == "A Python test server with notes."
    finally:
        await client.aclose()
    assert not client.connected


async def test_tool_errors_keep_the_server_message() -> None:
    async with McpToolset(py_config()) as toolset:
        tools = {t.name: t for t in toolset.tools}
        result = await tools["fail"].invoke({"reason": "over budget"}, ToolContext())
        assert result.is_error and "refused: over budget" in (result.error or "")
        ok = await tools["add"].invoke({"a": 1, "b": 2}, ToolContext())
        assert ok.value == {"result": 3}
        assert all(t.kind == "mcp" for t in tools.values())
        assert [t.name async for t in toolset] == [t.name for t in toolset.tools]


async def test_timeout_then_the_connection_still_works() -> None:
    client = McpClient(py_config(call_timeout=1.0))
    try:
        with pytest.raises(McpError, match="timed out after 1s"):
            await client.call_tool("sleep", {"seconds": 5})
        result = await client.call_tool("add", {"a": 1, "b": 1})
        assert result.structured_content == {"result": 2}
        assert client.connect_count == 1
    finally:
        await client.aclose()


async def test_reconnects_after_the_server_was_killed() -> None:
    client = McpClient(py_config())
    try:
        first = (await client.call_tool("pid", {})).structured_content
        assert first is not None
        os.kill(int(first["result"]), signal.SIGKILL)
        await asyncio.sleep(0.3)
        second = (await client.call_tool("pid", {})).structured_content
        assert second is not None and second["result"] != first["result"]
        assert client.connect_count == 2
    finally:
        await client.aclose()


async def test_without_reconnect_a_dropped_server_is_an_error() -> None:
    client = McpClient(py_config(reconnect=False))
    try:
        with pytest.raises(McpError, match="Connection closed"):
            await client.call_tool("crash", {})
    finally:
        await client.aclose()


async def test_clean_shutdown_from_another_task_stops_the_process() -> None:
    client = McpClient(py_config())
    pid = int((await client.call_tool("pid", {})).structured_content["result"])
    await asyncio.create_task(client.aclose())
    await asyncio.sleep(0.2)
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)
    await client.aclose()  # idempotent


async def test_concurrent_calls_share_one_connection() -> None:
    client = McpClient(py_config())
    try:
        results = await asyncio.gather(
            *(client.call_tool("add", {"a": i, "b": 1}) for i in range(20))
        )
        assert [r.structured_content for r in results] == [{"result": i + 1} for i in range(20)]
        assert client.connect_count == 1
    finally:
        await client.aclose()


def test_a_client_survives_a_new_event_loop() -> None:
    client = McpClient(py_config())
    first = asyncio.run(client.call_tool("add", {"a": 1, "b": 1}))
    second = asyncio.run(client.call_tool("add", {"a": 2, "b": 2}))
    asyncio.run(client.aclose())
    assert first.structured_content == {"result": 2}
    assert second.structured_content == {"result": 4}
    assert client.connect_count == 2


async def test_connect_timeout_when_the_server_never_answers() -> None:
    silent = McpServerConfig(
        name="silent",
        command=sys.executable,
        args=["-c", "import time; time.sleep(60)"],
        connect_timeout=1.0,
    )
    client = McpClient(silent)
    started = time.monotonic()
    with pytest.raises(McpError, match="no connection within 1s"):
        await client.connect()
    assert time.monotonic() - started < 8
    assert not client.connected


async def test_connect_failure_is_an_mcp_error() -> None:
    client = McpClient({"name": "ghost", "command": "/nonexistent/mcp-server"})
    with pytest.raises(McpError, match="ghost"):
        await client.connect()
    assert not client.connected


async def test_everything_server_stdio_prefix_allow_list_and_approval() -> None:
    cfg = McpServerConfig(
        name="everything",
        command=npm_bin("mcp-server-everything"),
        args=["stdio"],
        tool_prefix="ev",
        tools=["echo", "get-sum"],
        approval_mode={"get-sum": "always"},
    )
    async with McpToolset(cfg) as toolset:
        tools = {t.name: t for t in toolset.tools}
        assert set(tools) == {"ev_echo", "ev_get-sum"}
        assert isinstance(tools["ev_get-sum"], ApprovalRequiredTool)
        assert not tools["ev_echo"].requires_approval
        echo = await tools["ev_echo"].invoke({"message": "hi there"}, ToolContext())
        assert echo.value == "Echo: hi there"
        total = await tools["ev_get-sum"].invoke({"a": 2, "b": 3}, ToolContext())
        assert "is 5" in str(total.value)
        bad = await tools["ev_get-sum"].invoke({"a": "x"}, ToolContext())
        assert bad.is_error and bad.error


async def test_allow_list_naming_a_missing_tool_is_a_configuration_error() -> None:
    toolset = McpToolset(py_config(tools=["add", "nope"]))
    try:
        with pytest.raises(ConfigurationError, match="'nope'"):
            await toolset.load()
    finally:
        await toolset.aclose()


async def test_everything_server_over_streamable_http_on_loopback() -> None:
    port = free_port()
    cmd = [npm_bin("mcp-server-everything"), "streamableHttp"]
    with serve(cmd, port, env=node_loopback_env(port)):
        client = McpClient({"name": "ev-http", "url": f"http://127.0.0.1:{port}/mcp"})
        try:
            result = await client.call_tool("echo", {"message": "over http"})
            assert result.content[0].text == "Echo: over http"  # type: ignore[union-attr]
        finally:
            await client.aclose()


async def test_everything_server_over_sse_on_loopback() -> None:
    port = free_port()
    cmd = [npm_bin("mcp-server-everything"), "sse"]
    with serve(cmd, port, env=node_loopback_env(port)):
        client = McpClient(
            {"name": "ev-sse", "transport": "sse", "url": f"http://127.0.0.1:{port}/sse"}
        )
        try:
            names = [t.name for t in await client.list_tools()]
            assert "echo" in names
            result = await client.call_tool("echo", {"message": "over sse"})
            assert result.content[0].text == "Echo: over sse"  # type: ignore[union-attr]
        finally:
            await client.aclose()


async def test_python_server_over_streamable_http() -> None:
    port = free_port()
    with serve(py_server_cmd("http", str(port)), port):
        async with McpToolset({"url": f"http://127.0.0.1:{port}/mcp", "name": "pyh"}) as ts:
            add = next(t for t in ts.tools if t.name == "add")
            result = await add.invoke({"a": 20, "b": 22}, ToolContext())
            assert result.value == {"result": 42}


async def test_filesystem_server_reads_and_refuses_outside(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("alpha beta\n", encoding="utf-8")
    cfg = McpServerConfig(name="fs", command=npm_bin("mcp-server-filesystem"), args=[str(tmp_path)])
    async with McpToolset(cfg) as toolset:
        tools = {t.name: t for t in toolset.tools}
        read = await tools["read_text_file"].invoke(
            {"path": str(tmp_path / "notes.txt")}, ToolContext()
        )
        assert read.value == {"content": "alpha beta\n"}
        outside = await tools["read_text_file"].invoke({"path": sys.executable}, ToolContext())
        assert outside.is_error and "Access denied" in (outside.error or "")
