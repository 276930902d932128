"""The typed event stream (order, JSON form, streamed agent updates tagged by node), agents
as nodes, and a workflow used as an agent."""

from __future__ import annotations

import asyncio
import json

import pytest

from raf import (
    AgentBuilder,
    AgentResponse,
    AgentRunOptions,
    ApprovalError,
    ApprovalRequiredTool,
    ChatMessage,
    FinishReason,
    ToolApprovalResponse,
    UpdateKind,
    fold_updates,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply
from raf.workflow import (
    AgentExecutor,
    Executor,
    InputResponse,
    NodeCompleted,
    NodeStreaming,
    OutputEvent,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowError,
    WorkflowRunError,
    executor,
    handler,
)


@executor
def shout(text: str) -> str:
    return text.upper()


@executor
def boom(text: str) -> str:
    raise ValueError("no")


async def test_events_come_in_order_and_are_json_ready() -> None:
    workflow = WorkflowBuilder("s", start=shout).build()
    events = [e async for e in workflow.run_stream("hi")]
    names = [type(e).__name__ for e in events]
    assert names == [
        "WorkflowStarted",
        "SuperstepStarted",
        "NodeInvoked",
        "NodeCompleted",
        "OutputEvent",
        "SuperstepCompleted",
        "WorkflowCompleted",
    ]
    dumped = json.loads(json.dumps([e.to_dict() for e in events]))
    assert dumped[3] == {"type": "NodeCompleted", "node": "shout", "superstep": 1, "result": "HI"}
    assert dumped[-1]["outputs"] == ["HI"]


async def test_a_failed_stream_yields_workflow_failed_then_raises() -> None:
    workflow = WorkflowBuilder("b", start=shout).add_edge(shout, boom).build()
    seen: list[str] = []
    with pytest.raises(WorkflowRunError, match="node 'boom' failed"):
        async for event in workflow.run_stream("hi"):
            seen.append(type(event).__name__)
    assert seen[-2:] == ["NodeFailed", "WorkflowFailed"]


def writer(name: str, *replies: str) -> AgentExecutor:
    agent = AgentBuilder().with_name(name).with_chat_client(ScriptedChatClient(replies)).build()
    return AgentExecutor(agent)


async def test_agent_nodes_stream_their_updates_tagged_by_node() -> None:
    draft = writer("drafter", "a first draft")
    polish = writer("polisher", "a polished draft")
    workflow = WorkflowBuilder("w", start=draft).add_edge(draft, polish).build()
    events = [e async for e in workflow.run_stream("write")]
    streamed = [e for e in events if isinstance(e, NodeStreaming)]
    by_node: dict[str, str] = {}
    for event in streamed:
        by_node[event.node] = by_node.get(event.node, "") + event.update.text
    assert by_node == {"drafter": "a first draft", "polisher": "a polished draft"}
    assert len(streamed) > 2  # chunks, not whole answers
    # The second agent got the first one's answer as its request.
    outputs = [e.data for e in events if isinstance(e, OutputEvent)]
    assert outputs[0].text == "a polished draft"
    completed = [e for e in events if isinstance(e, NodeCompleted)]
    assert [e.node for e in completed] == ["drafter", "polisher"]


async def test_an_agent_node_keeps_its_conversation_within_a_run_only() -> None:
    model = ScriptedChatClient(["one", "two", "three", "four"])
    agent = AgentBuilder().with_name("bot").with_chat_client(model).build()

    class Twice(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(text + " 1")
            await ctx.send_message(text + " 2")

    twice = Twice()
    workflow = WorkflowBuilder("t", start=twice).add_edge(twice, agent).build()
    result = await workflow.run("q")
    assert [o.text for o in result.outputs] == ["one", "two"]
    # Both messages went to one conversation, one after the other.
    assert [m.text for m in model.requests[1].messages] == ["q 1", "one", "q 2"]
    await workflow.run("again")
    assert [m.text for m in model.requests[2].messages] == ["again 1"]


async def test_a_workflow_as_an_agent_runs_and_streams() -> None:
    draft = writer("drafter", "draft", "draft")
    polish = writer("polisher", "final text", "final text")
    agent = WorkflowBuilder("pipeline", start=draft).add_edge(draft, polish).build().as_agent()
    response = await agent.run("write about owls")
    assert response.text == "final text" and response.finish_reason is FinishReason.COMPLETED
    updates = [u async for u in agent.run_stream("write about owls")]
    # Only the end agent's text is shown, streamed in chunks, once.
    texts = [u.text for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert "".join(texts) == "final text" and len(texts) > 1
    assert fold_updates(updates).text == "final text"


async def test_a_workflow_agent_asks_and_is_answered_on_the_next_turn() -> None:
    class Greeter(Executor):
        @handler
        async def start(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.request_input("What is your name?")

        @handler
        async def named(self, answer: InputResponse[str], ctx: WorkflowContext[str]) -> None:
            await ctx.yield_output(f"Hello, {answer.response}!")

    agent = WorkflowBuilder("greet", start=Greeter()).build().as_agent()
    session = agent.create_session()
    first = await agent.run("hi", session)
    assert first.finish_reason is FinishReason.AWAITING_APPROVAL
    (pending,) = first.pending_approvals
    assert pending.reason == "greeter asks (str): What is your name?"
    assert session.pending_approvals == [pending]
    second = await agent.run("Ada", session)
    assert second.text == "Hello, Ada!" and session.pending_approvals == []
    assert [m.text for m in session.messages] == ["hi", "Ada", "Hello, Ada!"]


@tool
def drop_table(name: str) -> str:
    """Drop a table (needs approval)."""
    return f"dropped {name}"


async def test_tool_approvals_inside_a_workflow_agent_use_approval_responses() -> None:
    model = ScriptedChatClient([reply("", call("drop_table", name="t")), "table dropped"])
    dba = (
        AgentBuilder()
        .with_name("dba")
        .with_chat_client(model)
        .with_tool(ApprovalRequiredTool(drop_table))
        .build()
    )
    agent = WorkflowBuilder("ops", start=dba).build().as_agent()
    session = agent.create_session()
    first = await agent.run([ChatMessage.user("drop t")], session)
    (pending,) = first.pending_approvals
    assert pending.name == "drop_table" and pending.arguments == {"name": "t"}
    with pytest.raises(ApprovalError, match="no pending request 'other'"):
        await agent.run([], session, AgentRunOptions(tool_approval_responses=[_yes("other")]))
    done = await agent.run(
        [], session, AgentRunOptions(tool_approval_responses=[_yes(pending.call_id)])
    )
    assert done.text == "table dropped"


def _yes(call_id: str) -> ToolApprovalResponse:
    return ToolApprovalResponse(call_id=call_id, approved=True)


async def test_a_failing_workflow_agent_raises_the_run_error() -> None:
    agent = WorkflowBuilder("b", start=shout).add_edge(shout, boom).build().as_agent()
    with pytest.raises(WorkflowRunError, match="ValueError: no"):
        await agent.run("x")


async def test_a_workflow_is_a_node_of_another_workflow() -> None:
    inner = WorkflowBuilder("inner", start=writer("drafter", "inner draft")).build()

    @executor
    def wrap(response: AgentResponse) -> str:
        return f"[{response.text}]"

    outer = WorkflowBuilder("outer", start=inner).add_edge("inner", wrap).build()
    result = await outer.run("go")
    assert result.outputs == ["[inner draft]"]


async def test_a_workflow_object_runs_one_run_at_a_time() -> None:
    gate = asyncio.Event()

    @executor
    async def wait(text: str) -> str:
        await gate.wait()
        return text

    workflow = WorkflowBuilder("one", start=wait).build()
    first = asyncio.ensure_future(workflow.run("a"))
    await asyncio.sleep(0)
    with pytest.raises(WorkflowError, match="'one' is already running"):
        await workflow.run("b")
    gate.set()
    assert (await first).outputs == ["a"]
    assert (await workflow.run("c")).outputs == ["c"]


async def test_streamed_agent_updates_are_json_ready_with_their_node() -> None:
    workflow = WorkflowBuilder("j", start=writer("solo", "hello there")).build()
    events = [e async for e in workflow.run_stream("hi")]
    streamed = [e.to_dict() for e in events if isinstance(e, NodeStreaming)]
    assert streamed[0]["type"] == "NodeStreaming" and streamed[0]["node"] == "solo"
    assert streamed[0]["update"]["kind"] == "text_delta"
    json.dumps([e.to_dict() for e in events])
