"""`raf mcp serve`: a raf agent served over stdio and streamable HTTP, called by the
official `mcp` client (through raf's McpClient)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from raf.cli.main import main
from raf.tools.mcp import McpClient

from .peers import ROOT, free_port, serve

FACTORY = "tests.tools.mcp_agent_factory:make_agent"


def serve_args(*extra: str) -> list[str]:
    return [sys.executable, "-m", "raf.cli", "mcp", "serve", "--python", FACTORY, *extra]


async def test_agent_over_stdio_keeps_sessions_and_hides_approval_tools() -> None:
    cmd = serve_args("--expose-tools")
    client = McpClient({"name": "raf", "command": cmd[0], "args": cmd[1:], "cwd": str(ROOT)})
    try:
        names = {t.name for t in await client.list_tools()}
        assert names == {"ask", "shout"}
        first = await client.call_tool("ask", {"message": "hello", "session_id": "s1"})
        assert first.content[0].text == "turn 1: you said 'hello'"  # type: ignore[union-attr]
        assert first.structured_content == {
            "answer": "turn 1: you said 'hello'",
            "session_id": "s1",
        }
        second = await client.call_tool("ask", {"message": "again", "session_id": "s1"})
        assert second.content[0].text == "turn 2: you said 'again'"  # type: ignore[union-attr]
        fresh = await client.call_tool("ask", {"message": "new"})
        assert fresh.content[0].text.startswith("turn 1")  # type: ignore[union-attr]
        shout = await client.call_tool("shout", {"text": "quiet"})
        assert shout.content[0].text == "QUIET"  # type: ignore[union-attr]
        bad = await client.call_tool("ask", {"message": ""})
        assert bad.is_error and "non-empty" in bad.content[0].text  # type: ignore[union-attr]
    finally:
        await client.aclose()


async def test_agent_over_streamable_http_without_tools() -> None:
    port = free_port()
    cmd = serve_args("--transport", "http", "--port", str(port))
    with serve(cmd, port, env={"PYTHONPATH": str(ROOT)}):
        client = McpClient({"name": "raf-http", "url": f"http://127.0.0.1:{port}/mcp"})
        try:
            assert [t.name for t in await client.list_tools()] == ["ask"]
            result = await client.call_tool("ask", {"message": "over http"})
            assert result.content[0].text == "turn 1: you said 'over http'"  # type: ignore[union-attr]
        finally:
            await client.aclose()


def test_serve_needs_exactly_one_agent_source(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve"]) == 1
    assert "exactly one of FILE or --python" in capsys.readouterr().err
    assert main(["mcp", "serve", "--python", "nosuchmodule:x"]) == 1
    assert "cannot load" in capsys.readouterr().err


async def test_declared_agent_file_is_served(tmp_path: Path) -> None:
    declared = tmp_path / "agent.yaml"
    declared.write_text(
        "name: doc-agent\n"
        "description: Answers questions about the docs.\n"
        "model:\n  id: test-model\n  provider: openai\n"
        "  connection: {endpoint: 'http://127.0.0.1:9/v1'}\n",
        encoding="utf-8",
    )
    cmd = [sys.executable, "-m", "raf.cli", "mcp", "serve", str(declared)]
    client = McpClient(
        {"command": cmd[0], "args": cmd[1:], "env": {"OPENAI_API_KEY": "sk-test-not-used"}}
    )
    try:
        assert [t.name for t in await client.list_tools()] == ["ask"]
        assert client.server_instructions == "Answers questions about the docs."
    finally:
        await client.aclose()


def test_a_broken_declaration_is_reported(tmp_path: Path) -> None:
    bad = tmp_path / "agent.yaml"
    bad.write_text("name: [unclosed\n", encoding="utf-8")
    assert main(["mcp", "serve", str(bad)]) == 1
