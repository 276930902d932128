"""A member's tool approval pauses the orchestration; the decision resumes it without
running finished turns again — directly, as an agent, across a store, as a sub-agent."""

from __future__ import annotations

import pytest

from raf import AgentBuilder, AgentSession, FinishReason
from raf.agent.agent_tool import AgentTool
from raf.core.errors import ApprovalError
from raf.orchestrations import (
    ConcurrentOrchestration,
    EventKind,
    SequentialOrchestration,
)
from raf.testing import ScriptedChatClient, call, reply

from .helpers import approve, approving, member


def chain():
    planner, pc = member("planner", "plan: write x")
    coder, cc = member(
        "coder", reply("", call("write", path="x", call_id="k1")), "wrote x", approve="write"
    )
    reviewer, rc = member("reviewer", "looks good")
    return SequentialOrchestration([planner, coder, reviewer], name="team"), pc, cc, rc


async def test_direct_run_pauses_and_resumes_without_rerunning_finished_turns():
    orch, pc, cc, rc = chain()
    paused = await orch.run("build x")
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    (request,) = paused.pending_approvals
    assert (request.call_id, request.name) == ("k1", "write")
    assert request.reason == (
        "this tool is marked as needing a person's approval for every call "
        "(asked by member 'coder')"
    )
    assert paused.speakers == ["planner"]
    assert paused.session is not None and paused.session.pending_approvals == [request]
    # another process: the session goes through JSON
    session = AgentSession.from_json(paused.session.to_json())
    done = await orch.run(session=session, approvals=approve("k1"))
    assert done.finish_reason is FinishReason.STOP
    assert done.speakers == ["planner", "coder", "reviewer"]
    assert [m.author_name for m in done.messages if m.message_id in done.replayed] == ["planner"]
    assert (len(pc.requests), len(cc.requests), len(rc.requests)) == (1, 2, 1)
    assert cc.requests[1].messages[-1].function_results[0].result == "write ran"
    assert rc.requests[0].messages[-1].text == "wrote x"
    assert session.provider_state == {} and session.pending_approvals == []


async def test_a_denied_call_lets_the_member_go_on_without_it():
    orch, _, cc, _ = chain()
    paused = await orch.run("build x")
    done = await orch.run(session=paused.session, approvals=approve("k1", approved=False))
    assert done.finish_reason is FinishReason.STOP
    result = cc.requests[1].messages[-1].function_results[0]
    assert result.error is not None and "denied" in result.error


async def test_wrong_answers_are_refused():
    orch, *_ = chain()
    paused = await orch.run("build x")
    with pytest.raises(ApprovalError, match="'nope' is not waiting"):
        await orch.run(session=paused.session, approvals=approve("nope"))
    with pytest.raises(ApprovalError, match="waits for tool approvals"):
        await orch.run("something else", session=paused.session)
    with pytest.raises(ApprovalError, match="no member of this orchestration waits"):
        await orch.run(approvals=approve("k1"))


async def test_concurrent_members_pause_together_and_finished_ones_are_kept():
    a, ac = member("a", reply("", call("send", call_id="s1")), "a sent", approve="send")
    b, bc = member("b", "b answered")
    c, cc = member("c", reply("", call("send", call_id="s2")), "c sent", approve="send")
    orch = ConcurrentOrchestration([a, b, c])
    paused = await orch.run("go")
    assert sorted(p.call_id for p in paused.pending_approvals) == ["s1", "s2"]
    done = await orch.run(session=paused.session, approvals=approve("s1", "s2"))
    assert done.speakers == ["a", "b", "c", "concurrent"]
    assert [m.text for m in done.messages[:3]] == ["a sent", "b answered", "c sent"]
    assert (len(ac.requests), len(bc.requests), len(cc.requests)) == (2, 1, 2)


async def test_answering_one_of_two_paused_members_resumes_only_that_one():
    a, _ = member("a", reply("", call("send", call_id="s1")), "a sent", approve="send")
    c, _ = member("c", reply("", call("send", call_id="s2")), "c sent", approve="send")
    orch = ConcurrentOrchestration([a, c])
    paused = await orch.run("go")
    again = await orch.run(session=paused.session, approvals=approve("s1"))
    assert [p.call_id for p in again.pending_approvals] == ["s2"]
    done = await orch.run(session=again.session, approvals=approve("s2"))
    assert done.speakers == ["a", "c", "concurrent"]


async def test_as_agent_the_approval_is_on_the_response_and_the_session():
    orch, *_ = chain()
    agent = orch.as_agent()
    session = agent.create_session()
    paused = await agent.run("build x", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    assert [p.call_id for p in paused.pending_approvals] == ["k1"]
    assert [p.call_id for p in session.pending_approvals] == ["k1"]
    # the request is in the transcript at once; the members' answers when the run ends
    assert [m.text for m in session.messages] == ["build x"]
    session = AgentSession.from_json(session.to_json())
    done = await agent.run([], session=session, options=approving("k1"))
    assert done.text == "looks good"
    # the planner's answer was in the paused response; the resumed one holds what is new
    assert [m.author_name for m in paused.messages[:-1]] == ["planner"]
    assert [m.author_name for m in done.messages] == ["coder", "reviewer"]
    assert [m.text for m in session.messages] == [
        "build x",
        "plan: write x",
        "wrote x",
        "looks good",
    ]
    assert session.pending_approvals == [] and session.provider_state == {}


async def test_streamed_agent_shows_the_approval_request():
    orch, *_ = chain()
    agent = orch.as_agent()
    session = agent.create_session()
    updates = [u async for u in agent.run_stream("build x", session=session)]
    requests = [u for u in updates if u.kind.value == "approval_request"]
    assert [u.call_id for u in requests] == ["k1"]
    assert updates[-1].finish_reason is FinishReason.AWAITING_APPROVAL


async def test_stream_ends_with_a_paused_event():
    orch, *_ = chain()
    events = [e async for e in orch.run_stream("build x")]
    assert events[-1].kind is EventKind.PAUSED
    assert events[-1].result is not None and events[-1].result.pending_approvals


async def test_an_orchestration_as_a_sub_agent_pauses_its_parent():
    orch, *_ = chain()
    parent_client = ScriptedChatClient(
        [reply("", call("team", task="build x", call_id="p1")), "the team built x"]
    )
    parent = (
        AgentBuilder("lead").with_chat_client(parent_client).with_tool(AgentTool(orch.as_agent()))
    ).build()
    session = parent.create_session()
    paused = await parent.run("get x built", session=session)
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL
    assert "write" in (paused.pending_approvals[0].reason or "")
    done = await parent.run([], session=session, options=approving("p1"))
    assert done.text == "the team built x"
    assert parent_client.requests[1].messages[-1].function_results[0].result == "looks good"


async def test_a_nested_orchestration_pauses_and_resumes_through_the_outer_one():
    inner, _, cc, _ = chain()
    outer_first, _ = member("scout", "found the spot")
    outer = SequentialOrchestration([outer_first, inner.as_agent()], name="outer")
    paused = await outer.run("go")
    assert [p.call_id for p in paused.pending_approvals] == ["k1"]
    done = await outer.run(session=paused.session, approvals=approve("k1"))
    assert done.speakers == ["scout", "team"]
    assert done.text == "looks good"
    assert len(cc.requests) == 2


async def test_answering_part_of_one_members_calls_is_refused_and_keeps_the_run():
    both = reply("", call("send", n=1, call_id="s1"), call("send", n=2, call_id="s2"))
    a, ac = member("a", both, "sent both", approve="send")
    orch = SequentialOrchestration([a])
    paused = await orch.run("go")
    with pytest.raises(ApprovalError, match="missing: s2"):
        await orch.run(session=paused.session, approvals=approve("s1"))
    done = await orch.run(session=paused.session, approvals=approve("s1", "s2"))
    assert done.text == "sent both" and len(ac.requests) == 2
