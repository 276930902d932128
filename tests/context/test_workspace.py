"""WorkspaceContextProvider through a real Agent and the scripted model: approval is asked
only for calls that leave the workspace; deny refuses at the tool; allow never asks."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from raf import AgentBuilder, AgentRunOptions, FinishReason, ToolApprovalResponse
from raf.context.workspace import OutsideApprovalTool, WorkspaceContextProvider
from raf.core.errors import ToolDefinitionError
from raf.core.function_tool import tool
from raf.testing import ScriptedChatClient, call, reply
from raf.tools.files import ReadFile, file_tools
from raf.tools.workspace import ScopePolicy, WorkspaceScope


@pytest.fixture
def world(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "in.txt").write_text("inside text\n")
    (tmp_path / "out.txt").write_text("outside text\n")
    return root, tmp_path / "out.txt"


def _provider(root: Path, policy: str) -> WorkspaceContextProvider:
    provider = WorkspaceContextProvider(WorkspaceScope(root, name="proj", policy=policy))
    for t in file_tools():
        provider.add_tool(t)
    return provider


def _results(messages: list[Any]) -> list[Any]:
    return [c for m in messages for c in m.contents if type(c).__name__ == "FunctionResultContent"]


async def test_approve_outside_asks_only_for_outside_calls(world: tuple[Path, Path]):
    root, outside = world
    client = ScriptedChatClient(
        [
            reply("", call("read_file", path="in.txt", call_id="c1")),
            "read it",
            reply("", call("read_file", path=str(outside), call_id="c2")),
            "done",
        ]
    )
    provider = _provider(root, "approve")
    agent = AgentBuilder().with_chat_client(client).with_context_provider(provider).build()
    session = agent.create_session()
    first = await agent.run("read in.txt", session=session)
    assert first.finish_reason is not FinishReason.AWAITING_APPROVAL
    inside_result = _results(first.messages)[0]
    assert "inside text" in str(inside_result.result)
    second = await agent.run("read the outside file", session=session)
    assert second.finish_reason is FinishReason.AWAITING_APPROVAL
    assert [p.call_id for p in second.pending_approvals] == ["c2"]
    resumed = await agent.run(
        [],
        session=session,
        options=AgentRunOptions(
            tool_approval_responses=[ToolApprovalResponse(call_id="c2", approved=True)]
        ),
    )
    assert "outside text" in str(_results(resumed.messages)[0].result)
    assert resumed.text == "done"


async def test_approve_outside_denied_call_reads_nothing(world: tuple[Path, Path]):
    root, outside = world
    client = ScriptedChatClient(
        [reply("", call("read_file", path=str(outside), call_id="c9")), "ok"]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_context_provider(_provider(root, "approve"))
        .build()
    )
    session = agent.create_session()
    paused = await agent.run("go", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    denied = await agent.run(
        [],
        session=session,
        options=AgentRunOptions(
            tool_approval_responses=[
                ToolApprovalResponse(call_id="c9", approved=False, reason="private")
            ]
        ),
    )
    result = _results(denied.messages)[0]
    assert "private" in (result.error or "") and "outside text" not in str(result.result)


async def test_deny_outside_refuses_at_the_tool(world: tuple[Path, Path]):
    root, outside = world
    client = ScriptedChatClient(
        [reply("", call("read_file", path=str(outside), call_id="c1")), "refused"]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_context_provider(_provider(root, "deny"))
        .build()
    )
    response = await agent.run("go")
    assert response.finish_reason is not FinishReason.AWAITING_APPROVAL
    result = _results(response.messages)[0]
    assert "OutsideScope" in (result.error or "")


async def test_allow_all_never_asks(world: tuple[Path, Path]):
    root, outside = world
    client = ScriptedChatClient(
        [reply("", call("read_file", path=str(outside), call_id="c1")), "fine"]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_context_provider(_provider(root, "read"))
        .build()
    )
    response = await agent.run("go")
    assert "outside text" in str(_results(response.messages)[0].result)


async def test_instructions_and_tools_reach_the_model(world: tuple[Path, Path]):
    root, _ = world
    client = ScriptedChatClient(["hello"])
    provider = _provider(root, "approve")
    agent = AgentBuilder().with_chat_client(client).with_context_provider(provider).build()
    await agent.run("hi")
    request = client.requests[0]
    assert str(root) in request.system and "approve_outside" in request.system
    assert "read_file" in request.system
    assert len(request.tool_names) == 11 and "run_command" in request.tool_names


def test_add_tool_steps(world: tuple[Path, Path]):
    root, _ = world
    approve = WorkspaceContextProvider(WorkspaceScope(root, policy=ScopePolicy.APPROVE_OUTSIDE))
    wrapped = approve.add_tool(ReadFile())
    assert isinstance(wrapped, OutsideApprovalTool) and wrapped.requires_approval
    assert not wrapped.approval_required({"path": "in.txt"})
    assert wrapped.approval_required({"path": "../out.txt"})
    deny = WorkspaceContextProvider(WorkspaceScope(root, policy="deny"), name="d")
    plain = deny.add_tool(ReadFile())
    assert isinstance(plain, ReadFile) and not plain.requires_approval
    assert deny.name == "d" and deny.kind == "workspace"
    with pytest.raises(ToolDefinitionError, match="already has a tool"):
        deny.add_tool(ReadFile())

    @tool
    def echo(text: str) -> str:
        """Echo."""
        return text

    with pytest.raises(ToolDefinitionError, match="not a ScopeTool"):
        deny.add_tool(echo)


async def test_an_approval_is_spent_on_the_call_it_was_given_for(
    world: tuple[Path, Path], tmp_path: Path
):
    """A model that reuses an approved call id later in the same run gets no free pass: here
    a symlink swapped in after the loop's approval check (as a concurrent command could do)
    must not be read on the strength of the earlier approval."""
    root, outside = world
    secret = tmp_path / "secret.txt"
    secret.write_text("SECRET-BYTES\n")

    @tool
    async def swap() -> str:
        """Point ws/x at the secret (stands for a concurrent command in the same batch)."""
        (root / "x").symlink_to(secret)
        return "swapped"

    client = ScriptedChatClient(
        [
            reply("", call("read_file", path=str(outside), call_id="c1")),
            reply("", call("swap", call_id="s1"), call("read_file", path="x", call_id="c1")),
            "done",
        ]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_context_provider(_provider(root, "approve"))
        .with_tool(swap)
        .build()
    )
    session = agent.create_session()
    paused = await agent.run("go", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    resumed = await agent.run(
        [],
        session=session,
        options=AgentRunOptions(
            tool_approval_responses=[ToolApprovalResponse(call_id="c1", approved=True)]
        ),
    )
    texts = [str(r.result) + str(r.error) for r in _results(resumed.messages)]
    assert "outside text" in texts[0]
    assert not any("SECRET-BYTES" in t for t in texts), texts


def test_instructions_say_how_run_command_is_contained_under_allow_all(
    world: tuple[Path, Path],
) -> None:
    from raf.tools.shell import RunCommand

    root, _ = world
    open_net = WorkspaceContextProvider(WorkspaceScope(root, policy="allow"))
    open_net.add_tool(RunCommand())
    assert "run_command runs without a sandbox." in open_net.instructions()
    no_net = WorkspaceContextProvider(WorkspaceScope(root, policy="allow"))
    no_net.add_tool(RunCommand(network=False))
    assert "light sandbox: there is no network." in no_net.instructions()
    ruled = WorkspaceContextProvider(
        WorkspaceScope(root, policy="allow", rules=[{"path": "secrets/**", "read": "deny"}])
    )
    ruled.add_tool(RunCommand(network=False))
    text = ruled.instructions()
    assert "paths the rules restrict are hidden or read-only and there is no network" in text
