"""`raf mcp serve`: a raf agent served over stdio and streamable HTTP, called by the
official `mcp` client (through raf's McpClient)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from raf.cli.main import main
from raf.tools.mcp import McpClient
from tests.tools.peers import ROOT, free_port, serve

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


NOTES_AGENT = """\
name: notes
description: Keeps notes in its folder.
instructions: You keep notes.
model: {id: gpt-4o-mini, provider: openai, connection: {endpoint: 'http://127.0.0.1:9/v1'}}
tools:
  - {kind: file, name: write_file}
contexts:
  - {kind: workspace, name: here, config: {root: ., policy: allow}}
"""


def notes_agent(tmp_path: Path, note: str) -> list[str]:
    """A declared agent whose scripted model writes `note` to note.txt, then answers."""
    (tmp_path / "agent.yaml").write_text(NOTES_AGENT, encoding="utf-8")
    replies = [
        {"calls": [{"name": "write_file", "arguments": {"path": "note.txt", "content": note}}]},
        f"Noted: {note}.",
    ]
    (tmp_path / "script.json").write_text(json.dumps(replies), encoding="utf-8")
    return [
        sys.executable,
        "-m",
        "raf.cli",
        "mcp",
        "serve",
        str(tmp_path / "agent.yaml"),
        "--model",
        f"scripted:{tmp_path / 'script.json'}",
    ]


async def test_declared_agent_answers_ask_over_stdio(tmp_path: Path) -> None:
    cmd = notes_agent(tmp_path, "buy milk")
    client = McpClient({"command": cmd[0], "args": cmd[1:], "env": {"RAF_MODEL": ""}})
    try:
        result = await client.call_tool("ask", {"message": "remember: buy milk"})
        assert not result.is_error
        assert result.content[0].text == "Noted: buy milk."  # type: ignore[union-attr]
        # The declared tool really ran in the served agent's workspace.
        assert (tmp_path / "note.txt").read_text(encoding="utf-8") == "buy milk"
    finally:
        await client.aclose()


async def test_declared_agent_answers_ask_over_http(tmp_path: Path) -> None:
    port = free_port()
    cmd = [*notes_agent(tmp_path, "call Ada"), "--transport", "http", "--port", str(port)]
    with serve(cmd, port, env={"RAF_MODEL": ""}):
        client = McpClient({"name": "notes", "url": f"http://127.0.0.1:{port}/mcp"})
        try:
            result = await client.call_tool("ask", {"message": "remember: call Ada"})
            assert result.content[0].text == "Noted: call Ada."  # type: ignore[union-attr]
            assert result.structured_content is not None
            assert result.structured_content["answer"] == "Noted: call Ada."
        finally:
            await client.aclose()
    # The workspace root is relative to the declaration, not to the server's cwd.
    assert (tmp_path / "note.txt").read_text(encoding="utf-8") == "call Ada"


def test_model_only_applies_to_a_file(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mcp", "serve", "--python", FACTORY, "--model", "scripted:x.json"]) == 1
    assert "--model applies to a FILE" in capsys.readouterr().err


def test_a_missing_scripted_model_is_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "agent.yaml").write_text(NOTES_AGENT, encoding="utf-8")
    missing = tmp_path / "nope.json"
    assert (
        main(["mcp", "serve", str(tmp_path / "agent.yaml"), "--model", f"scripted:{missing}"]) == 1
    )
    assert "cannot read the scripted model" in capsys.readouterr().err


def test_expose_tools_says_what_it_left_out_and_why(tmp_path: Path) -> None:
    from raf import AgentBuilder, WorkspaceContextProvider, WorkspaceScope, file_tools
    from raf.serve.mcp.server import AgentMcpServer
    from tests.tools.mcp_agent_factory import make_agent

    server = AgentMcpServer(make_agent(), expose_tools=True)
    assert list(server.tools) == ["shout"]
    assert server.left_out == {
        "delete_everything": "needs approval, which an MCP caller cannot give"
    }
    workspace = WorkspaceContextProvider(WorkspaceScope(tmp_path, name="w", policy="allow"))
    workspace.add_tool(file_tools()[0])
    agent = make_agent()
    with_workspace = (
        AgentBuilder("w").with_chat_client(agent.leaf_client).with_context_provider(workspace)
    ).build()
    exposed = AgentMcpServer(with_workspace, expose_tools=True)
    assert list(exposed.tools) == ["read_file"] and exposed.left_out == {}


def test_expose_tools_reads_a_providers_tools_method(tmp_path: Path) -> None:
    """The skills provider offers `tools()` as a method; exposing tools once crashed on it
    with "'method' object is not iterable"."""
    from raf import AgentBuilder, AgentSkillsProvider
    from raf.serve.mcp.server import AgentMcpServer
    from tests.tools.mcp_agent_factory import make_agent

    skill = tmp_path / "skills" / "greet"
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(
        "---\nname: greet\ndescription: Greets.\n---\nSay hello.\n", encoding="utf-8"
    )
    agent = (
        AgentBuilder("s")
        .with_chat_client(make_agent().leaf_client)
        .with_context_provider(AgentSkillsProvider(tmp_path / "skills"))
    ).build()
    exposed = AgentMcpServer(agent, expose_tools=True)
    assert list(exposed.tools) == ["load_skill"] and exposed.left_out == {}


def test_http_transport_prints_its_url_and_no_sdk_warning() -> None:
    import subprocess
    import time

    proc = subprocess.Popen(
        serve_args("--transport", "http", "--port", "0"),
        cwd=ROOT,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
    )
    try:
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        line = ""
        while time.monotonic() < deadline and "serving" not in line:
            line = proc.stderr.readline()
            assert "Warning" not in line, line
            if not line and proc.poll() is not None:
                break
        assert line.startswith("raf mcp: serving"), line
        url = line.split(" at ", 1)[1].split()[0]
        assert url.startswith("http://127.0.0.1:") and url.endswith("/mcp")
        assert not url.endswith(":0/mcp")
    finally:
        proc.terminate()
        proc.wait(timeout=10)
