"""Spent approvals live in the session: another process refuses a replayed approval."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raf import (
    AgentBuilder,
    AgentRunOptions,
    AgentSession,
    ApprovalError,
    ApprovalRequiredTool,
    FinishReason,
    SqliteSessionStore,
    ToolApprovalResponse,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply

RAN: list[str] = []


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


@tool
def delete_note(name: str) -> str:
    """Delete a note (dangerous)."""
    RAN.append(name)
    return f"deleted {name}"


REPLAY_SCRIPT = textwrap.dedent(
    """
    import asyncio, json, sys
    from raf import (AgentBuilder, AgentRunOptions, ApprovalError, ApprovalRequiredTool,
                     SqliteSessionStore, ToolApprovalResponse, tool)
    from raf.testing import ScriptedChatClient

    RAN = []

    @tool
    def delete_note(name: str) -> str:
        \"\"\"Delete a note (dangerous).\"\"\"
        RAN.append(name)
        return f"deleted {name}"

    async def main() -> None:
        store = SqliteSessionStore(sys.argv[1])
        session = await store.load(sys.argv[2])
        agent = (AgentBuilder().with_chat_client(ScriptedChatClient(["again"]))
                 .with_tool(ApprovalRequiredTool(delete_note)).build())
        old = ToolApprovalResponse(call_id=sys.argv[3], approved=True)
        try:
            await agent.run([], session=session, options=AgentRunOptions(
                tool_approval_responses=[old]))
            outcome = "ran"
        except ApprovalError as exc:
            outcome = f"refused: {exc}"
        print(json.dumps({"outcome": outcome, "ran": RAN,
                          "pending": [p.call_id for p in session.pending_approvals]}))

    asyncio.run(main())
    """
)


def _approve(call_id: str) -> AgentRunOptions:
    return AgentRunOptions(
        tool_approval_responses=[ToolApprovalResponse(call_id=call_id, approved=True)]
    )


async def test_a_replayed_approval_is_refused_in_another_process(tmp_path: Path) -> None:
    # a model that reuses call ids asks twice for the same dangerous call id
    model = ScriptedChatClient(
        [
            reply("", call("delete_note", name="a", call_id="d1")),
            "deleted a",
            reply("", call("delete_note", name="b", call_id="d1")),
        ]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(ApprovalRequiredTool(delete_note))
        .with_session_store(SqliteSessionStore(tmp_path / "s.db"))
        .build()
    )
    session = agent.create_session()
    assert (await agent.run("delete a", session=session)).pending_approvals
    assert (await agent.run([], session=session, options=_approve("d1"))).text == "deleted a"
    assert session.spent_approvals == ["d1"] and RAN == ["a"]
    second = await agent.run("now delete b", session=session)
    assert second.finish_reason is FinishReason.AWAITING_APPROVAL
    [pending] = second.pending_approvals
    assert pending.call_id != "d1"  # the new request cannot be answered by the old approval
    calls = [c.call_id for m in session.messages for c in m.function_calls]
    assert pending.call_id in calls  # the call itself carries the new id too

    proc = subprocess.run(
        [sys.executable, "-c", REPLAY_SCRIPT, str(tmp_path / "s.db"), session.id, "d1"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["outcome"].startswith("refused: the approval for call id 'd1' was already used")
    assert seen["ran"] == [] and seen["pending"] == [pending.call_id]


async def test_spent_approvals_survive_the_json_form() -> None:
    session = AgentSession(spent_approvals=["d1", "d2"])
    assert AgentSession.from_json(session.to_json()).spent_approvals == ["d1", "d2"]
    assert "spent_approvals" not in AgentSession().to_dict()  # nothing written when empty


async def test_a_resume_refused_by_a_middleware_leaves_the_approval_unspent() -> None:
    from raf.core.middleware import CallNext, FunctionInvocationContext

    class Refused(Exception):
        pass

    refuse = True

    async def audit(context: FunctionInvocationContext, call_next: CallNext) -> None:
        await call_next()
        if refuse:
            raise Refused("audit log unavailable")

    model = ScriptedChatClient([reply("", call("delete_note", name="a", call_id="d1")), "ok"])
    agent = AgentBuilder().with_chat_client(model).with_tool(ApprovalRequiredTool(delete_note))
    built = agent.use_middleware(audit).build()
    session = built.create_session()
    await built.run("delete a", session=session)
    with pytest.raises(Refused):
        await built.run([], session=session, options=_approve("d1"))
    assert session.spent_approvals == []  # the turn failed: the human may answer again
    assert [p.call_id for p in session.pending_approvals] == ["d1"]
    refuse = False
    assert (await built.run([], session=session, options=_approve("d1"))).text == "ok"
    assert session.spent_approvals == ["d1"]
    with pytest.raises(ApprovalError, match="already used"):
        await built.run([], session=session, options=_approve("d1"))


async def test_a_resume_whose_model_call_fails_keeps_the_result_and_spends_the_approval() -> None:
    model = ScriptedChatClient(
        [reply("", call("delete_note", name="a", call_id="d1")), RuntimeError("model down"), "ok"]
    )
    agent = AgentBuilder().with_chat_client(model).with_tool(ApprovalRequiredTool(delete_note))
    built = agent.build()
    session = built.create_session()
    await built.run("delete a", session=session)
    with pytest.raises(RuntimeError, match="model down"):
        await built.run([], session=session, options=_approve("d1"))
    assert RAN == ["a"] and session.spent_approvals == ["d1"]
    assert session.pending_approvals == []  # the call has its result in the session
    with pytest.raises(ApprovalError, match="already used"):
        await built.run([], session=session, options=_approve("d1"))
    assert (await built.run([], session=session)).text == "ok"
    assert RAN == ["a"]
