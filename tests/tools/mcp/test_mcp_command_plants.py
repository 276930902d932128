"""`raf mcp serve --expose-tools` over streamable HTTP, with no person on the other end:
a remote caller's run_command cannot plant a repository that runs code at the user's next
`git status`, create a file a write-deny rule covers, or write one a write-approve rule
asks about (the call is refused, since a person's approval is needed)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from raf.tools.mcp import McpClient
from tests.tools.bounded import require_bubblewrap
from tests.tools.planting import PLANT_NESTED, PLANT_REPOSITORY, git_runs_code, make_repository

from ..peers import free_port, serve

pytestmark = pytest.mark.slow

AGENT = """\
kind: prompt
name: shell-agent
description: Runs commands in one folder
model: {{id: scripted, provider: openai}}
tools:
  - kind: shell
contexts:
  - kind: workspace
    name: project
    config:
      root: ws
      policy: deny
      rules: {rules}
"""


def _server(tmp_path: Path, rules: str) -> tuple[list[str], int]:
    (tmp_path / "ws").mkdir()
    (tmp_path / "agent.yaml").write_text(AGENT.format(rules=rules), encoding="utf-8")
    (tmp_path / "replies.json").write_text('["nothing to say"]', encoding="utf-8")
    port = free_port()
    cmd = [
        sys.executable, "-m", "raf.cli", "mcp", "serve", str(tmp_path / "agent.yaml"),
        "--model", f"scripted:{tmp_path / 'replies.json'}", "--expose-tools",
        "--transport", "http", "--port", str(port),
    ]  # fmt: skip
    return cmd, port


def _text(result: object) -> str:
    return "".join(getattr(c, "text", "") for c in getattr(result, "content", []))


async def test_a_remote_command_cannot_plant_code_or_break_a_deny_rule(tmp_path: Path) -> None:
    require_bubblewrap()
    cmd, port = _server(tmp_path, "[{path: '.github/workflows/**', write: deny}]")
    root = tmp_path / "ws"
    make_repository(root / "repo")
    with serve(cmd, port):
        client = McpClient({"name": "shell", "url": f"http://127.0.0.1:{port}/mcp"})
        try:
            planted = await client.call_tool("run_command", {"command": PLANT_REPOSITORY})
            nested = await client.call_tool("run_command", {"command": PLANT_NESTED, "cwd": "repo"})
            workflow = await client.call_tool(
                "run_command",
                {"command": "mkdir -p .github/workflows && echo on > .github/workflows/x.yml"},
            )
        finally:
            await client.aclose()
    ran = _text(planted)  # it ran, and failed: the root's .git is a read-only stand-in
    assert '"exit_code": ' in ran and '"exit_code": 0' not in ran
    assert nested.is_error and "'repo/sub/.git'" in _text(nested)
    assert workflow.is_error and "'.github/workflows/x.yml'" in _text(workflow)
    assert not (root / ".github" / "workflows" / "x.yml").exists()
    for folder in (root, root / "repo", root / "repo" / "sub"):
        assert not git_runs_code(folder)
    assert not (root / ".git").exists()


async def test_a_write_approve_rule_refuses_remote_commands(tmp_path: Path) -> None:
    require_bubblewrap()
    cmd, port = _server(tmp_path, "[{path: '*.lock', write: approve}]")
    with serve(cmd, port):
        client = McpClient({"name": "shell", "url": f"http://127.0.0.1:{port}/mcp"})
        try:
            result = await client.call_tool("run_command", {"command": "echo y > y.lock"})
        finally:
            await client.aclose()
    said = _text(result)
    assert result.is_error and "run_command refused" in said and "'*.lock'" in said
    assert not (tmp_path / "ws" / "y.lock").exists()
