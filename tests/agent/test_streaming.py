"""run_stream follows the same lifecycle as run, and folding its updates gives run's answer."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from raf import (
    AgentBuilder,
    AgentRunOptions,
    AgentSession,
    ApprovalRequiredTool,
    ChatMessage,
    FinishReason,
    ToolApprovalResponse,
    UpdateKind,
    UsageDetails,
    fold_updates,
    tool,
)
from raf.core.errors import ConfigurationError
from raf.testing import ScriptedChatClient, call, reply
from tests.agent.helpers import make_tool


def _script() -> list[Any]:
    return [
        reply(
            "Let me look.",
            call("lookup", text="k", call_id="c1"),
            call("upper", text="x", call_id="c2"),
        ),
        reply("", call("lookup", text="again", call_id="c3")),
        "The answer is 42, and this sentence is long enough to be cut in several chunks.",
    ]


def _shape(messages: list[ChatMessage]) -> list[dict[str, Any]]:
    return [{k: v for k, v in m.to_dict().items() if k != "message_id"} for m in messages]


async def test_folding_the_stream_equals_run() -> None:
    usage = UsageDetails(input_tokens=5, output_tokens=1, total_tokens=6)
    tools = [make_tool("lookup"), make_tool("upper")]
    run_agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(_script(), usage=usage))
        .with_tools(tools)
        .build()
    )
    stream_agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(_script(), usage=usage, chunk_size=5))
        .with_tools(tools)
        .build()
    )

    s_run, s_stream = run_agent.create_session(), stream_agent.create_session()
    ran = await run_agent.run("question", session=s_run)
    updates = [u async for u in stream_agent.run_stream("question", session=s_stream)]
    folded = fold_updates(updates)

    assert _shape(folded.messages) == _shape(ran.messages)
    assert folded.finish_reason is ran.finish_reason is FinishReason.STOP
    assert folded.usage == ran.usage
    assert folded.text == ran.text
    assert _shape(s_stream.messages) == _shape(s_run.messages)
    assert updates[-1].kind is UpdateKind.FINISHED


async def test_stream_shows_the_tool_call_lifecycle_in_order() -> None:
    agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(_script(), chunk_size=3))
        .with_tools([make_tool("lookup"), make_tool("upper")])
        .build()
    )
    kinds = [(u.kind, u.call_id) async for u in agent.run_stream("q")]
    c1 = [k for k, cid in kinds if cid == "c1"]
    assert c1[0] is UpdateKind.TOOL_CALL_STARTED
    assert UpdateKind.TOOL_CALL_ARGUMENTS_DELTA in c1
    assert c1[-3:] == [UpdateKind.TOOL_CALL_ENDED, UpdateKind.TOOL_CALLING, UpdateKind.TOOL_CALLED]
    text_deltas = [k for k, _ in kinds if k is UpdateKind.TEXT_DELTA]
    assert len(text_deltas) > 10


async def test_stream_pauses_for_approval_and_resumes() -> None:
    model = ScriptedChatClient([reply("", call("rm", text="x", call_id="d1")), "removed"])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(ApprovalRequiredTool(make_tool("rm")))
        .build()
    )
    session = agent.create_session()
    updates = [u async for u in agent.run_stream("rm x", session=session)]
    requests = [u for u in updates if u.kind is UpdateKind.APPROVAL_REQUEST]
    assert [r.call_id for r in requests] == ["d1"]
    assert updates[-1].finish_reason is FinishReason.AWAITING_APPROVAL
    assert [p.call_id for p in session.pending_approvals] == ["d1"]
    resumed = [
        u
        async for u in agent.run_stream(
            [],
            session=session,
            options=AgentRunOptions(
                tool_approval_responses=[ToolApprovalResponse(call_id="d1", approved=True)]
            ),
        )
    ]
    assert fold_updates(resumed).text == "removed"
    called = [u for u in resumed if u.kind is UpdateKind.TOOL_CALLED]
    assert called[0].content is not None and called[0].call_id == "d1"


async def test_stream_updates_serialise_to_json_and_back() -> None:
    from raf import AgentResponseUpdate

    agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(_script()))
        .with_tools([make_tool("lookup"), make_tool("upper")])
        .build()
    )
    updates = [u async for u in agent.run_stream("q")]
    assert [AgentResponseUpdate.from_dict(u.to_dict()) for u in updates] == updates


async def test_run_stream_checks_and_sets_up_the_run_when_the_iteration_starts() -> None:
    agent = AgentBuilder().with_chat_client(ScriptedChatClient(["ok"])).build()
    session = AgentSession()
    updates = agent.run_stream("q", session=session, options=AgentRunOptions(tool_timeout=-1))
    with pytest.raises(ConfigurationError, match="tool_timeout"):
        await anext(updates)
    stream = agent.run_stream("q", session=session)
    assert session.messages == []
    assert session.request_hash is None  # nothing has run yet
    assert "".join([u.text async for u in stream if u.text]) == "ok"
    assert [m.text for m in session.messages] == ["q", "ok"]


async def test_a_batch_is_announced_before_its_calls_run() -> None:
    """`tool_calling` reaches the caller before the tool runs, so a slow tool is seen
    running: the tool here waits for the caller to have seen its announcement (it fails
    after 2 s when the announcement only comes with its result)."""
    announced = asyncio.Event()

    @tool
    async def waits_to_be_seen(x: int) -> str:
        """Returns once its call was announced to the caller."""
        await asyncio.wait_for(announced.wait(), 2)
        return f"seen {x}"

    model = ScriptedChatClient([reply("", call("waits_to_be_seen", x=1)), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(waits_to_be_seen).build()
    kinds = []
    async for update in agent.run_stream("go"):
        kinds.append(update.kind)
        if update.kind is UpdateKind.TOOL_CALLING:
            announced.set()
    assert kinds.index(UpdateKind.TOOL_CALLING) < kinds.index(UpdateKind.TOOL_CALLED)
    assert model.requests[1].messages[-1].function_results[0].result == "seen 1"
