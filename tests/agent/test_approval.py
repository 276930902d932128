"""Human approval: pause, approve, deny with a reason, refusal of forged answers, resume
in another process."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raf import (
    Agent,
    AgentBuilder,
    AgentRunOptions,
    ApprovalError,
    ApprovalRequiredTool,
    FinishReason,
    SqliteSessionStore,
    ToolApprovalResponse,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply
from raf.testing.scripted import ScriptItem

RAN: list[str] = []


@tool
def read_note(name: str) -> str:
    """Read a note (safe)."""
    RAN.append(f"read:{name}")
    return f"note {name}"


@tool
def delete_note(name: str) -> str:
    """Delete a note (dangerous)."""
    RAN.append(f"delete:{name}")
    return f"deleted {name}"


def _agent(script: list[ScriptItem]) -> tuple[Agent, ScriptedChatClient]:
    model = ScriptedChatClient(script)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(read_note)
        .with_tool(ApprovalRequiredTool(delete_note))
        .build()
    )
    return agent, model


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


async def test_a_batch_pauses_whole_and_approval_runs_it() -> None:
    agent, model = _agent(
        [
            reply(
                "",
                call("read_note", name="a", call_id="r1"),
                call("delete_note", name="b", call_id="d1"),
            ),
            "all done",
        ]
    )
    session = agent.create_session()
    paused = await agent.run("clean up", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    assert RAN == []  # all or nothing: the safe call did not run either
    [request] = paused.pending_approvals
    assert (request.call_id, request.name, request.arguments) == (
        "d1",
        "delete_note",
        {"name": "b"},
    )
    assert session.pending_approvals == [request]

    done = await agent.run(
        [],
        session=session,
        options=AgentRunOptions(
            tool_approval_responses=[ToolApprovalResponse(call_id="d1", approved=True)]
        ),
    )
    assert done.text == "all done" and done.finish_reason is FinishReason.STOP
    assert RAN == ["read:a", "delete:b"]
    assert session.pending_approvals == []
    results = model.requests[1].messages[-1].function_results
    assert [(r.call_id, r.result) for r in results] == [("r1", "note a"), ("d1", "deleted b")]


async def test_denial_reason_reaches_the_model_and_the_call_does_not_run() -> None:
    agent, model = _agent([reply("", call("delete_note", name="b", call_id="d1")), "ok, kept it"])
    session = agent.create_session()
    await agent.run("delete b", session=session)
    response = await agent.run(
        [],
        session=session,
        options=AgentRunOptions(
            tool_approval_responses=[
                ToolApprovalResponse(call_id="d1", approved=False, reason="b is still needed")
            ]
        ),
    )
    assert RAN == []
    seen = model.requests[1].messages[-1].function_results[0]
    assert seen.error == "the user denied this call: b is still needed"
    assert response.text == "ok, kept it"


async def test_forged_call_id_and_changed_arguments_are_refused_and_nothing_runs() -> None:
    agent, _ = _agent([reply("", call("delete_note", name="b", call_id="d1")), "x"])
    session = agent.create_session()
    await agent.run("delete b", session=session)
    forged = AgentRunOptions(
        tool_approval_responses=[ToolApprovalResponse(call_id="evil", approved=True)]
    )
    with pytest.raises(ApprovalError, match="'evil' is not waiting for approval.*d1"):
        await agent.run([], session=session, options=forged)
    changed = AgentRunOptions(
        tool_approval_responses=[
            ToolApprovalResponse(call_id="d1", approved=True, arguments={"name": "everything"})
        ]
    )
    with pytest.raises(ApprovalError, match="differ from the pending call"):
        await agent.run([], session=session, options=changed)
    with pytest.raises(ApprovalError, match="waiting for approval: delete_note"):
        await agent.run("something else", session=session)
    assert RAN == []
    assert [p.call_id for p in session.pending_approvals] == ["d1"]


async def test_answers_without_anything_pending_are_refused() -> None:
    agent, _ = _agent(["hi"])
    with pytest.raises(ApprovalError, match="no tool call is waiting"):
        await agent.run(
            [],
            options=AgentRunOptions(
                tool_approval_responses=[ToolApprovalResponse(call_id="x", approved=True)]
            ),
        )


RESUME_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from raf import AgentBuilder, AgentRunOptions, ApprovalRequiredTool, SqliteSessionStore
    from raf import ToolApprovalResponse, tool
    from raf.testing import ScriptedChatClient

    @tool
    def delete_note(name: str) -> str:
        "Delete a note."
        return f"deleted {name} in process 2"

    async def main() -> None:
        store = SqliteSessionStore(sys.argv[1])
        session = await store.load(sys.argv[2])
        model = ScriptedChatClient(["resumed elsewhere"])
        agent = (AgentBuilder().with_chat_client(model)
                 .with_tool(ApprovalRequiredTool(delete_note)).build())
        [pending] = session.pending_approvals
        response = await agent.run([], session=session, options=AgentRunOptions(
            tool_approval_responses=[ToolApprovalResponse(call_id=pending.call_id, approved=True)]))
        await store.save(session)
        seen = model.requests[0].messages[-1].function_results[0].result
        print(json.dumps({"text": response.text, "seen": seen}))

    asyncio.run(main())
    """
)


async def test_pause_save_to_sqlite_and_resume_in_another_process(tmp_path: Path) -> None:
    agent, _ = _agent([reply("", call("delete_note", name="b", call_id="d1"))])
    store = SqliteSessionStore(tmp_path / "sessions.db")
    session = agent.create_session()
    paused = await agent.run("delete b", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    await store.save(session)

    proc = subprocess.run(
        [sys.executable, "-c", RESUME_SCRIPT, str(tmp_path / "sessions.db"), session.id],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out == {"text": "resumed elsewhere", "seen": "deleted b in process 2"}
    resumed = await store.load(session.id)
    assert resumed.pending_approvals == []
    assert resumed.messages[-1].text == "resumed elsewhere"
