"""One run machine, three pumps: `run` takes its steps, `run_stream` reports them, `iter`
hands each out before it runs."""

from __future__ import annotations

from typing import Any

import pytest

from raf import (
    Agent,
    AgentBuilder,
    AgentRunOptions,
    AgentSession,
    ApprovalError,
    ApprovalResponseContent,
    ChatMessage,
    FinishReason,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(approval_required=True)
def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _script() -> list[Any]:
    return [
        reply("", call("add", call_id="c1", a=1, b=2), call("add", call_id="c2", a=3, b=4)),
        reply("", call("add", call_id="c3", a=3, b=7)),
        "the sums are 3, 7 and 10",
    ]


def _agent(script: list[Any] | None = None, *tools: Any) -> Agent:
    model = ScriptedChatClient(script if script is not None else _script(), chunk_size=4)
    return Agent(chat_client=model, tools=list(tools or (add,)), name="adder")


def _shape(message: ChatMessage) -> tuple[Any, ...]:
    """A message without its generated ids: role, text, calls and results."""
    return (
        message.role,
        message.text,
        [(c.name, dict(c.arguments)) for c in message.function_calls],
        [(r.name, r.result, r.error) for r in message.function_results],
    )


def _update_shape(update: Any) -> tuple[Any, ...]:
    return (update.kind, update.text, update.tool_name, update.finish_reason)


async def test_iter_reports_the_steps_and_their_updates_are_what_the_stream_yields() -> None:
    streamed = [u async for u in _agent().run_stream("add them")]
    async with _agent().iter("add them") as steps:
        taken = [step async for step in steps]
    names = [s.name for s in taken]
    assert names == [
        "prepare",
        "call_model",
        "after_reply",
        "run_batch",
        "call_model",
        "after_reply",
        "run_batch",
        "call_model",
        "after_reply",
        "check_output",
        "record",
        "end",
    ]
    joined = [u for s in taken for u in s.updates]
    assert [_update_shape(u) for u in joined] == [_update_shape(u) for u in streamed]
    assert steps.response is not None
    assert steps.response.text == "the sums are 3, 7 and 10"


async def test_a_run_stepped_through_ends_in_the_same_session_as_run() -> None:
    by_run, by_steps = _agent(), _agent()
    run_session, step_session = by_run.create_session(), by_steps.create_session()
    response = await by_run.run("add them", session=run_session)
    async with by_steps.iter("add them", session=step_session) as steps:
        async for _ in steps:
            pass
    assert steps.response is not None
    assert [_shape(m) for m in steps.response.messages] == [_shape(m) for m in response.messages]
    assert [_shape(m) for m in step_session.messages] == [_shape(m) for m in run_session.messages]
    assert len(step_session.messages) == 6
    assert step_session.usage.requests == run_session.usage.requests == 3


async def test_a_run_without_tools_asks_the_model_once() -> None:
    agent = Agent(chat_client=ScriptedChatClient(["plain answer"]))
    async with agent.iter("hi") as steps:
        names = [s.name async for s in steps]
    assert names == ["prepare", "call_model", "after_reply", "check_output", "record", "end"]
    assert steps.response is not None and steps.response.text == "plain answer"


async def test_iter_pauses_for_approval_and_the_next_run_resumes() -> None:
    script = [reply("", call("delete", call_id="d1", path="a.txt")), "done"]
    agent = _agent(script, delete)
    session = agent.create_session()
    async with agent.iter("clean up", session=session) as steps:
        names = [s.name async for s in steps]
    assert names[-4:] == ["pause", "check_output", "record", "end"]
    assert steps.response is not None
    assert steps.response.finish_reason is FinishReason.AWAITING_APPROVAL
    assert [p.call_id for p in session.pending_approvals] == ["d1"]
    # the paused run is plain data: its session, written out and read back, resumes it
    session = AgentSession.from_json(session.to_json())
    answer = ApprovalResponseContent(call_id="d1", approved=True)
    options = AgentRunOptions(tool_approval_responses=[answer])
    async with agent.iter([], session=session, options=options) as steps:
        names = [s.name async for s in steps]
    assert names[:3] == ["prepare", "resume", "run_batch"]
    assert steps.response is not None and steps.response.text == "done"
    assert session.pending_approvals == []
    assert session.messages[-2].function_results[0].result == "deleted a.txt"


async def test_iter_checks_the_request_when_entered() -> None:
    script = [reply("", call("delete", call_id="d1", path="a.txt"))]
    agent = _agent(script, delete)
    session = agent.create_session()
    await agent.run("clean up", session=session)
    with pytest.raises(ApprovalError, match="waiting for approval"):
        async with agent.iter("something else", session=session):
            pass


async def test_agent_and_builder_keep_the_same_session_over_two_turns() -> None:
    def script() -> list[Any]:
        return ["first answer", "second answer"]

    plain = Agent(chat_client=ScriptedChatClient(script()), name="a", instructions="Be brief.")
    built = (
        AgentBuilder("a")
        .with_chat_client(ScriptedChatClient(script()))
        .with_instructions("Be brief.")
        .build()
    )
    sessions = []
    for agent in (plain, built):
        session = agent.create_session()
        await agent.run("one", session=session)
        await agent.run("two", session=session)
        sessions.append([_shape(m) for m in session.messages])
    assert sessions[0] == sessions[1]
    assert len(sessions[0]) == 4
    assert [p.kind for p in plain.context_providers] == [p.kind for p in built.context_providers]


async def test_agent_without_history_keeps_no_transcript() -> None:
    agent = Agent(chat_client=ScriptedChatClient(["a", "b"]), history=None)
    session = agent.create_session()
    await agent.run("one", session=session)
    await agent.run("two", session=session)
    assert session.messages == []
    assert agent.context_providers == ()


async def test_each_step_is_handed_out_before_it_runs_and_can_be_replaced() -> None:
    from raf.agent.run import steps as run_steps

    model = ScriptedChatClient(["never asked"])
    agent = Agent(chat_client=model)
    seen: list[str] = []

    async def answer_without_the_model(run: Any) -> Any:
        run.keep([ChatMessage.assistant("answered by the caller")])
        run.finish_reason = FinishReason.STOP
        return run_steps.check_output

    async with agent.iter("hi") as steps:
        async for step in steps:
            seen.append(step.name)
            if step.name == "call_model":
                assert model.requests == []  # handed out before it ran
                steps.replace(answer_without_the_model)
    assert seen == ["prepare", "call_model", "check_output", "record", "end"]
    assert model.requests == []
    assert steps.response is not None and steps.response.text == "answered by the caller"


async def test_leaving_the_steps_early_stops_the_run_and_keeps_the_session() -> None:
    agent = _agent()
    session = agent.create_session()
    async with agent.iter("add them", session=session) as steps:
        async for step in steps:
            if step.name == "run_batch":
                break
    assert steps.response is None
    assert session.messages == []  # nothing of the stopped turn is kept


async def test_steps_are_handed_out_through_an_agent_middleware() -> None:
    from raf.core.middleware import AgentRunContext, CallNext

    order: list[str] = []

    async def around(context: AgentRunContext, call_next: CallNext) -> None:
        order.append("before")
        await call_next()
        order.append("after")

    agent = Agent(chat_client=ScriptedChatClient(["hello"]), middleware=[around])
    async with agent.iter("hi") as steps:
        async for step in steps:
            order.append(step.name)
    assert order == [
        "before",
        "prepare",
        "call_model",
        "after_reply",
        "check_output",
        "after",
        "record",
        "end",
    ]
    assert steps.response is not None and steps.response.text == "hello"
