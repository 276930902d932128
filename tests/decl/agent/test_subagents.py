"""Sub-agents: built recursively, offered as tools, their approvals surfacing through the
parent's run and resuming through it."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf import AgentRunOptions, AgentSession, FinishReason, ToolApprovalResponse
from raf.agent.agent_tool import AgentTool
from raf.core.errors import ValidationProblems
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient, call, reply
from tests.decl.helpers import PlainTool

PARENT = """
name: lead
instructions: You delegate.
subAgents:
  - file: coder.yaml
    description: Writes code on request
"""
CODER = """
name: coder
description: Writes files
instructions: You write.
model:
  connection: {kind: reference, name: coder-model}
tools:
  - {kind: custom, name: write, approvalRequired: true}
"""


def build(tmp_path: Path, parent: ScriptedChatClient, child: ScriptedChatClient):
    (tmp_path / "lead.yaml").write_text(PARENT, encoding="utf-8")
    (tmp_path / "coder.yaml").write_text(CODER, encoding="utf-8")
    return (
        DeclAgentBuilder()
        .from_yaml_file(tmp_path / "lead.yaml")
        .with_chat_client(parent)
        .with_connection("coder-model", client=child)
        .register_factory("write", lambda c: PlainTool("write"))
        .build()
    )


def approve(call_id: str, approved: bool = True, reason: str | None = None) -> AgentRunOptions:
    return AgentRunOptions(
        tool_approval_responses=[
            ToolApprovalResponse(call_id=call_id, approved=approved, reason=reason)
        ]
    )


def test_sub_agent_is_offered_as_a_tool(tmp_path):
    agent = build(tmp_path, ScriptedChatClient([]), ScriptedChatClient([]))
    (tool,) = agent.tools
    assert isinstance(tool, AgentTool)
    assert (tool.name, tool.description, tool.kind) == ("coder", "Writes code on request", "agent")
    assert tool.parameters["required"] == ["task"]
    assert [t.name for t in tool.agent.tools] == ["write"]


async def test_sub_agent_answers_through_the_parent(tmp_path):
    parent = ScriptedChatClient([reply("", call("coder", task="say hi", call_id="p1")), "done"])
    child = ScriptedChatClient(["hi from coder"])
    agent = build(tmp_path, parent, child)
    response = await agent.run("delegate")
    assert response.text == "done"
    result = parent.requests[1].messages[-1].function_results[0]
    assert result.result == "hi from coder"
    assert child.requests[0].messages[-1].text == "say hi"


async def test_sub_agent_approval_pauses_the_parent_and_resumes_through_it(tmp_path):
    parent = ScriptedChatClient(
        [reply("", call("coder", task="write it", call_id="p1")), "the coder wrote it"]
    )
    child = ScriptedChatClient([reply("", call("write", path="x", call_id="k1")), "written"])
    agent = build(tmp_path, parent, child)
    session = agent.create_session()
    paused = await agent.run("get it written", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    (request,) = paused.pending_approvals
    assert (request.call_id, request.name) == ("p1", "coder")
    assert request.reason is not None and 'write({"path": "x"})' in request.reason
    # the paused parent and its child survive a store round-trip
    session = AgentSession.from_json(session.to_json())
    done = await agent.run([], session=session, options=approve("p1"))
    assert done.text == "the coder wrote it"
    child_results = [r for m in child.requests[1].messages for r in m.function_results]
    assert [(r.call_id, r.result) for r in child_results] == [("k1", "write ran")]
    assert parent.requests[1].messages[-1].function_results[0].result == "written"
    assert not session.pending_approvals
    assert "agent-tool:coder" not in session.provider_state


async def test_denying_the_sub_agents_request_tells_the_parent_model(tmp_path):
    parent = ScriptedChatClient(
        [reply("", call("coder", task="write it", call_id="p1")), "understood"]
    )
    child = ScriptedChatClient([reply("", call("write", call_id="k1"))])
    agent = build(tmp_path, parent, child)
    session = agent.create_session()
    await agent.run("go", session=session)
    done = await agent.run([], session=session, options=approve("p1", False, "not now"))
    assert done.text == "understood"
    result = parent.requests[1].messages[-1].function_results[0]
    assert result.error == "the user denied this call: not now"
    # the denied child's waiting task is gone: nothing of it stays in the parent session
    assert "agent-tool:coder" not in session.provider_state
    assert '"k1"' not in session.to_json()  # the child's own call


async def test_a_denied_request_leaves_no_child_state_after_a_store_round_trip(tmp_path):
    parent = ScriptedChatClient([reply("", call("coder", task="w", call_id="p1")), "ok"])
    child = ScriptedChatClient([reply("", call("write", call_id="k1"))])
    agent = build(tmp_path, parent, child)
    session = agent.create_session()
    async for _ in agent.run_stream("go", session=session):
        pass
    session = AgentSession.from_json(session.to_json())  # another process resumes it
    assert "agent-tool:coder" in session.provider_state
    updates = agent.run_stream([], session=session, options=approve("p1", False))
    assert [u.finish_reason async for u in updates][-1] is FinishReason.STOP
    assert session.provider_state == {}


async def test_one_denied_one_approved_sub_agent_call_in_a_batch(tmp_path):
    parent = ScriptedChatClient(
        [
            reply("", call("coder", task="a", call_id="p1"), call("coder", task="b", call_id="p2")),
            "one done",
        ]
    )
    child = ScriptedChatClient(
        [
            reply("", call("write", which="a", call_id="k1")),
            reply("", call("write", which="b", call_id="k2")),
            "b done",
        ]
    )
    agent = build(tmp_path, parent, child)
    session = agent.create_session()
    await agent.run("two tasks", session=session)
    options = AgentRunOptions(
        tool_approval_responses=[
            ToolApprovalResponse(call_id="p1", approved=False, reason="no"),
            ToolApprovalResponse(call_id="p2", approved=True),
        ]
    )
    done = await agent.run([], session=session, options=options)
    assert done.text == "one done"
    results = {r.call_id: (r.result, r.error) for r in done.messages[0].function_results}
    assert results == {"p1": (None, "the user denied this call: no"), "p2": ("b done", None)}
    assert "agent-tool:coder" not in session.provider_state


async def test_a_wrapped_agent_tool_is_released_too(tmp_path):
    from raf.agent.builder import AgentBuilder
    from raf.core.tools import ApprovalRequiredTool

    child_client = ScriptedChatClient([reply("", call("write", call_id="k1"))])
    child = AgentBuilder("coder").with_chat_client(child_client)
    child.with_tool(ApprovalRequiredTool(PlainTool("write")))
    tool = ApprovalRequiredTool(AgentTool(child.build()))
    parent = ScriptedChatClient([reply("", call("coder", task="w", call_id="p1")), "ok"])
    agent = AgentBuilder("lead").with_chat_client(parent).with_tool(tool).build()
    session = agent.create_session()
    first = await agent.run("go", session=session)  # the wrapper asks first
    assert first.finish_reason is FinishReason.AWAITING_APPROVAL
    second = await agent.run([], session=session, options=approve("p1"))  # the child asks
    assert second.finish_reason is FinishReason.AWAITING_APPROVAL
    assert "agent-tool:coder" in session.provider_state
    await agent.run([], session=session, options=approve("p1", False))
    assert "agent-tool:coder" not in session.provider_state


async def test_a_sub_agent_asking_twice_pauses_the_parent_twice(tmp_path):
    parent = ScriptedChatClient([reply("", call("coder", task="two", call_id="p1")), "both"])
    child = ScriptedChatClient(
        [
            reply("", call("write", n=1, call_id="k1")),
            reply("", call("write", n=2, call_id="k2")),
            "wrote two",
        ]
    )
    agent = build(tmp_path, parent, child)
    session = agent.create_session()
    first = await agent.run("go", session=session)
    assert first.finish_reason is FinishReason.AWAITING_APPROVAL
    second = await agent.run([], session=session, options=approve("p1"))
    assert second.finish_reason is FinishReason.AWAITING_APPROVAL
    assert [p.call_id for p in second.pending_approvals] == ["p1"]
    assert '"n": 2' in (second.pending_approvals[0].reason or "")
    third = await agent.run([], session=session, options=approve("p1"))
    assert third.text == "both"
    assert parent.requests[1].messages[-1].function_results[0].result == "wrote two"


async def test_streamed_parent_shows_the_sub_agents_request(tmp_path):
    parent = ScriptedChatClient([reply("", call("coder", task="w", call_id="p1")), "ok"])
    child = ScriptedChatClient([reply("", call("write", call_id="k1")), "w"])
    agent = build(tmp_path, parent, child)
    session = agent.create_session()
    kinds = [u.kind.value async for u in agent.run_stream("go", session=session)]
    assert "approval_request" in kinds
    assert session.pending_approvals[0].name == "coder"


def test_inline_sub_agent(tmp_path):
    text = "name: lead\nsubAgents:\n  - name: helper\n    instructions: You help.\n"
    agent = DeclAgentBuilder().from_yaml_str(text).with_chat_client(ScriptedChatClient([])).build()
    assert [t.name for t in agent.tools] == ["helper"]


def test_sub_agent_cycle_is_reported_where_it_closes(tmp_path):
    (tmp_path / "a.yaml").write_text("name: a\nsubAgents:\n  - file: b.yaml\n")
    (tmp_path / "b.yaml").write_text("name: b\nsubAgents:\n  - file: a.yaml\n")
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_yaml_file(tmp_path / "a.yaml")
    (problem,) = info.value.problems
    assert problem.message == "sub-agent cycle: a.yaml → b.yaml → a.yaml"
    assert problem.file is not None and problem.file.endswith("b.yaml")
    assert (problem.line, problem.column, problem.key_path) == (3, 11, "subAgents[0].file")


async def test_two_paused_sub_agent_calls_in_one_batch_both_resume(tmp_path):
    parent = ScriptedChatClient(
        [
            reply("", call("coder", task="a", call_id="p1"), call("coder", task="b", call_id="p2")),
            "both done",
        ]
    )
    child = ScriptedChatClient(
        [
            reply("", call("write", which="a", call_id="k1")),
            reply("", call("write", which="b", call_id="k2")),
            "a done",
            "b done",
        ]
    )
    agent = build(tmp_path, parent, child)
    session = agent.create_session()
    paused = await agent.run("two tasks", session=session)
    assert sorted(p.call_id for p in paused.pending_approvals) == ["p1", "p2"]
    assert sorted(session.provider_state["agent-tool:coder"]) == ["p1", "p2"]
    options = AgentRunOptions(
        tool_approval_responses=[
            ToolApprovalResponse(call_id="p1", approved=True),
            ToolApprovalResponse(call_id="p2", approved=True),
        ]
    )
    done = await agent.run([], session=session, options=options)
    assert done.text == "both done"
    results = {r.call_id: r.result for r in parent.requests[1].messages[-1].function_results}
    assert results == {"p1": "a done", "p2": "b done"}
    assert "agent-tool:coder" not in session.provider_state


def test_a_sub_agent_file_outside_the_document_folder_is_never_read(tmp_path):
    import subprocess
    import sys

    secret_dir = tmp_path / "elsewhere"
    secret_dir.mkdir()
    (secret_dir / "credentials").write_text("name: [AKIA-SECRET-VALUE\n")
    (secret_dir / "agent.yaml").write_text("name: 42\ninstructions: SECRET-INSTRUCTIONS\n")
    project = tmp_path / "project"
    project.mkdir()
    (project / "link.yaml").symlink_to(secret_dir / "agent.yaml")
    (project / "notes.txt").write_text("maxToolRounds: SECRET-NOTES\n")
    (project / "lead.yaml").write_text(
        "name: lead\nsubAgents:\n"
        "  - file: ../elsewhere/credentials\n"
        f"  - file: {secret_dir / 'agent.yaml'}\n"
        "  - file: link.yaml\n"
        "  - file: notes.txt\n"
        "  - file: /etc/passwd\n"
    )
    done = subprocess.run(
        [sys.executable, "-m", "raf.cli", "validate", "--no-extras", "lead.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=project,
    )
    assert done.returncode == 1, done.stderr
    assert "SECRET" not in done.stderr + done.stdout and "root:" not in done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("  error:")]
    assert len(errors) == 5, done.stderr
    for line in errors[:3] + errors[4:]:
        assert "outside the folder of the top document" in line, line
    assert "lead.yaml:3:11 subAgents[0].file" in errors[0]
    assert "must be an agent document" in errors[3]


def test_values_of_a_named_sub_agent_file_are_not_echoed(tmp_path):
    (tmp_path / "lead.yaml").write_text("name: lead\nsubAgents:\n  - file: child.yaml\n")
    (tmp_path / "child.yaml").write_text("name: child\nmaxToolRounds: secret-ish\n")
    with pytest.raises(ValidationProblems) as info:
        DeclAgentBuilder().from_yaml_file(tmp_path / "lead.yaml")
    (problem,) = info.value.problems
    assert problem.key_path == "maxToolRounds" and problem.line == 2
    assert "secret-ish" not in str(info.value)
