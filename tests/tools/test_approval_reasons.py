"""A paused call says why it waits: which path, which access, which policy or rule of
which workspace, so the person asked can judge it (the CLI and the web UI show it)."""

from __future__ import annotations

from pathlib import Path

from raf import (
    AgentBuilder,
    FinishReason,
    WorkspaceContextProvider,
    WorkspaceScope,
    file_tools,
    tool,
)
from raf.core.tools import EVERY_CALL_REASON
from raf.testing import ScriptedChatClient, call, reply


def paused_reason(tmp_path: Path, scope: WorkspaceScope, name: str, **arguments: object) -> str:
    workspace = WorkspaceContextProvider(scope)
    for each in file_tools():
        workspace.add_tool(each)
    model = ScriptedChatClient([reply("", call(name, arguments, call_id="c1")), "done"])
    agent = AgentBuilder("w").with_chat_client(model).with_context_provider(workspace).build()
    response = agent.run_sync("go")
    assert response.finish_reason is FinishReason.AWAITING_APPROVAL
    [request] = response.pending_approvals
    assert request.reason is not None
    return request.reason


def test_a_read_outside_the_folder_names_the_path_and_the_policy(tmp_path: Path) -> None:
    outside = tmp_path / "elsewhere.txt"
    outside.write_text("x", encoding="utf-8")
    root = tmp_path / "project"
    root.mkdir()
    scope = WorkspaceScope(root, name="project", policy="approve")
    reason = paused_reason(tmp_path, scope, "read_file", path=str(outside))
    assert str(outside) in reason
    assert "read" in reason and "'project'" in reason and "approve_outside" in reason


def test_an_approve_rule_is_named(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "out.bin").write_text("x", encoding="utf-8")
    scope = WorkspaceScope(
        tmp_path, name="w", policy="allow", rules=[{"path": "build/**", "delete": "approve"}]
    )
    reason = paused_reason(tmp_path, scope, "remove_path", path="build/out.bin")
    assert "rule 'build/**' says approve for delete" in reason


def test_a_command_asking_to_leave_the_sandbox_says_so(tmp_path: Path) -> None:
    scope = WorkspaceScope(tmp_path, name="w", policy="approve")
    reason = paused_reason(tmp_path, scope, "run_command", command="ls", outside_workspace=True)
    assert "outside the sandbox" in reason and "'w'" in reason


def test_a_tool_that_always_asks_gives_the_general_reason() -> None:
    @tool(approval_required=True)
    def send(to: str) -> str:
        """Send a message."""
        return "sent"

    model = ScriptedChatClient([reply("", call("send", {"to": "ana"})), "done"])
    agent = AgentBuilder("s").with_chat_client(model).with_tool(send).build()
    [request] = agent.run_sync("go").pending_approvals
    assert request.reason == EVERY_CALL_REASON
