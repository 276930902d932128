"""`raf mcp serve examples/coding-assistant/agent.yaml --expose-tools`: the tools the
context providers add at run time (the workspace's file and shell tools, the skills
tool) are listed to real MCP clients over stdio (the official `mcp` SDK's, through raf's
McpClient, and the MCP Inspector's CLI from npm), and their calls keep the workspace's
rules (inside the folder they run; outside, where a run would ask a person, refused)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from raf import AgentBuilder, WorkspaceContextProvider, WorkspaceScope, file_tools
from raf.clients.hosted_tools import remote_mcp
from raf.serve.mcp.server import AgentMcpServer, call_exposed
from raf.tools.mcp import McpClient
from tests.tools.mcp_agent_factory import delete_everything, make_agent, shout
from tests.tools.peers import ROOT, npm_bin

EXAMPLE = ROOT / "examples" / "coding-assistant"

pytestmark = pytest.mark.slow


def text_of(result: object) -> str:
    return "".join(getattr(c, "text", "") for c in getattr(result, "content", []))


async def test_the_example_lists_its_workspace_and_skill_tools_to_an_mcp_client() -> None:
    cmd = [
        sys.executable,
        "-m",
        "raf.cli",
        "mcp",
        "serve",
        str(EXAMPLE / "agent.yaml"),
        "--model",
        f"scripted:{EXAMPLE / 'replies.json'}",
        "--expose-tools",
    ]
    client = McpClient({"name": "coding", "command": cmd[0], "args": cmd[1:], "cwd": str(ROOT)})
    try:
        names = {t.name for t in await client.list_tools()}
        assert {"ask", "read_file", "write_file", "list_files", "run_command"} <= names
        assert "load_skill" in names
        assert len(names) >= 12, names  # ask, ten file tools, run_command, load_skill

        inside = await client.call_tool("read_file", {"path": "agent.yaml"})
        assert not inside.is_error and "name: coding-assistant" in text_of(inside)
        # the workspace's `approve` policy: a path outside the folder needs a person
        outside = await client.call_tool("read_file", {"path": "../../README.md"})
        assert outside.is_error
        said = text_of(outside)
        assert "read_file refused" in said and "use 'ask' instead" in said
        assert "raf" not in said.split("refused", 1)[0]  # nothing of the file came back
        skill = await client.call_tool("load_skill", {"skill_name": "code-review"})
        assert not skill.is_error and text_of(skill)
    finally:
        await client.aclose()


def test_the_mcp_inspector_cli_lists_and_calls_the_workspace_tools() -> None:
    """The MCP Inspector (its CLI mode) as the user's client, the server as its child."""
    serve = [
        sys.executable,
        "-m",
        "raf.cli",
        "mcp",
        "serve",
        str(EXAMPLE / "agent.yaml"),
        "--model",
        f"scripted:{EXAMPLE / 'replies.json'}",
        "--expose-tools",
    ]

    def inspect(*method: str) -> dict[str, object]:
        done = subprocess.run(
            [npm_bin("mcp-inspector"), "--cli", *serve, *method],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        start = done.stdout.index("{")
        return dict(json.JSONDecoder().raw_decode(done.stdout[start:])[0])

    listed = inspect("--method", "tools/list")
    names = {t["name"] for t in listed["tools"]}  # type: ignore[attr-defined]
    assert {"read_file", "edit_file", "run_command", "load_skill"} <= names
    read = inspect(
        "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=agent.yaml"
    )
    assert not read.get("isError") and "name: coding-assistant" in json.dumps(read)
    outside = inspect(
        "--method", "tools/call", "--tool-name", "read_file", "--tool-arg", "path=../../README.md"
    )
    assert outside["isError"] is True and "climbs above the workspace root" in json.dumps(outside)


async def test_a_denied_path_stays_denied_and_a_tool_asking_every_call_stays_hidden(
    tmp_path: Path,
) -> None:
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "notes.txt").write_text("kept", encoding="utf-8")
    (tmp_path / "secret.txt").write_text("hidden", encoding="utf-8")
    workspace = WorkspaceContextProvider(WorkspaceScope(tmp_path / "work", name="w", policy="deny"))
    workspace.add_tools(file_tools())
    base = make_agent()
    hosted = remote_mcp("docs", "https://mcp.example.com/mcp")
    agent = (
        AgentBuilder("w")
        .with_chat_client(base.leaf_client)
        .with_tools([shout, delete_everything, hosted])
        .with_context_provider(workspace)
    ).build()
    server = AgentMcpServer(agent, expose_tools=True)
    await server.list_run_time_tools()
    assert "read_file" in server.tools and "shout" in server.tools
    assert server.left_out == {
        "delete_everything": "needs approval, which an MCP caller cannot give",
        "mcp_docs": "a hosted tool: the model's provider runs it, not raf",
    }

    inside = await call_exposed(server, "read_file", {"path": "notes.txt"})
    assert not inside.is_error and "kept" in text_of(inside)
    denied = await call_exposed(server, "read_file", {"path": "../secret.txt"})
    assert denied.is_error and "hidden" not in text_of(denied)
