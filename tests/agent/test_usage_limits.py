"""Usage limits per run and per session: the run ends with `UsageLimitExceeded` naming the
limit and the figure, and the session stays consistent."""

from __future__ import annotations

from typing import Any

import pytest

from raf import (
    AgentBuilder,
    AgentRunOptions,
    AgentSession,
    ChatMessage,
    ConfigurationError,
    FinishReason,
    UsageDetails,
    UsageLimitExceeded,
    UsageLimits,
    tool,
)
from raf.core.responses import ChatResponse
from raf.testing import ScriptedChatClient, call, reply

RAN: list[int] = []


@tool
def step(n: int) -> int:
    """One step of work."""
    RAN.append(n)
    return n


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def _consistent(messages: list[ChatMessage]) -> bool:
    calls = [c.call_id for m in messages for c in m.function_calls]
    results = [r.call_id for m in messages for r in m.function_results]
    return sorted(calls) == sorted(results)


def _costly(item: ChatMessage | str, tokens: int) -> ChatResponse:
    message = item if isinstance(item, ChatMessage) else ChatMessage.assistant(item)
    return ChatResponse(
        messages=[message],
        finish_reason=FinishReason.TOOL_CALLS if message.function_calls else FinishReason.STOP,
        usage=UsageDetails(input_tokens=tokens, output_tokens=1, total_tokens=tokens + 1),
    )


async def _run(agent: Any, session: AgentSession, stream: bool, **options: Any) -> Any:
    run_options = AgentRunOptions(**options)
    if not stream:
        return await agent.run("go", session=session, options=run_options)
    async for _ in agent.run_stream("go", session=session, options=run_options):
        pass
    return None


@pytest.mark.parametrize("stream", [False, True])
async def test_a_tool_call_limit_hit_mid_batch(stream: bool) -> None:
    model = ScriptedChatClient(
        [reply("", *(call("step", n=i, call_id=f"c{i}") for i in range(3))), "never"]
    )
    agent = AgentBuilder().with_chat_client(model).with_tool(step).build()
    session = agent.create_session()
    limits = UsageLimits(tool_calls=2)
    with pytest.raises(UsageLimitExceeded) as caught:
        await _run(agent, session, stream, usage_limits=limits)
    error = caught.value
    assert (error.limit, error.scope, error.maximum, error.figure) == ("tool_calls", "run", 2, 3)
    assert "tool_calls limit is 2" in str(error) and "reached 3" in str(error)
    assert RAN == [0, 1]  # the first two ran; the third was answered, not run
    assert len(model.requests) == 1
    # the turn is stored whole: every call has a result, nothing is half there
    assert _consistent(session.messages)
    last = session.messages[-1].function_results
    assert [r.call_id for r in last] == ["c0", "c1", "c2"]
    assert last[2].error is not None and last[2].error.startswith("not run: usage limit")
    assert error.response is not None and error.response.session_id == session.id
    assert session.usage.tool_calls == 2


async def test_a_request_limit_stops_before_the_next_model_call() -> None:
    model = ScriptedChatClient(
        [reply("", call("step", n=i, call_id=f"c{i}")) for i in range(5)] + ["done"]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(step)
        .with_usage_limits(UsageLimits(requests=2))
        .build()
    )
    session = agent.create_session()
    with pytest.raises(UsageLimitExceeded, match="requests limit is 2, and the run reached 3"):
        await agent.run("go", session=session)
    assert len(model.requests) == 2 and RAN == [0, 1]
    assert _consistent(session.messages)


async def test_a_token_limit_ends_the_run_after_the_reply_that_passed_it() -> None:
    model = ScriptedChatClient(
        [
            _costly(reply("", call("step", n=1, call_id="a")), 50),
            _costly(reply("", call("step", n=2, call_id="b")), 80),
            _costly("done", 10),
        ]
    )
    agent = AgentBuilder().with_chat_client(model).with_tool(step).build()
    session = agent.create_session()
    with pytest.raises(UsageLimitExceeded) as caught:
        await agent.run(
            "go",
            session=session,
            options=AgentRunOptions(usage_limits=UsageLimits(input_tokens=100)),
        )
    assert (caught.value.limit, caught.value.figure) == ("input_tokens", 130)
    assert RAN == [1]  # the call of the reply that passed the limit never ran
    assert _consistent(session.messages)
    assert session.messages[-1].function_results[0].call_id == "b"


async def test_session_limits_count_across_runs_and_processes() -> None:
    model = ScriptedChatClient([_costly("one", 40), _costly("two", 40), _costly("three", 40)])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_usage_limits(session=UsageLimits(total_tokens=100))
        .build()
    )
    session = agent.create_session()
    await agent.run("a", session=session)
    await agent.run("b", session=session)
    assert session.usage.total_tokens == 82 and session.usage.requests == 2
    restored = AgentSession.from_json(session.to_json())  # as another worker would load it
    with pytest.raises(UsageLimitExceeded) as caught:
        await agent.run("c", session=restored)
    assert (caught.value.scope, caught.value.limit, caught.value.figure) == (
        "session",
        "total_tokens",
        123,
    )
    assert "the session's total_tokens limit is 100" in str(caught.value)
    assert [m.text for m in restored.messages][-2:] == ["c", "three"]


async def test_limits_on_the_run_options_replace_the_agents() -> None:
    model = ScriptedChatClient([reply("", call("step", n=1, call_id="a")), "done"])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(step)
        .with_usage_limits(UsageLimits(tool_calls=1))
        .build()
    )
    response = await agent.run("go", options=AgentRunOptions(usage_limits=UsageLimits(requests=5)))
    assert response.text == "done"


async def test_a_session_over_its_limit_refuses_a_run_and_stores_nothing() -> None:
    agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient([_costly("x", 10)] * 3))
        .with_usage_limits(session=UsageLimits(requests=1))
        .build()
    )
    session = agent.create_session()
    await agent.run("a", session=session)
    before = [m.text for m in session.messages]
    with pytest.raises(UsageLimitExceeded, match="requests"):
        await agent.run("b", session=session)
    assert [m.text for m in session.messages] == before


@pytest.mark.parametrize("value", [0, -3, 1.5, True])
def test_a_limit_that_is_not_a_positive_whole_number_is_a_configuration_error(value: Any) -> None:
    with pytest.raises(ConfigurationError) as caught:
        UsageLimits(tool_calls=value)
    assert caught.value.key_path == "UsageLimits(tool_calls=...)"
    assert "above 0" in str(caught.value)


def test_the_builder_refuses_something_that_is_not_limits() -> None:
    with pytest.raises(ConfigurationError, match="with_usage_limits\\(session=...\\)"):
        AgentBuilder().with_usage_limits(session={"requests": 3})  # type: ignore[arg-type]


async def test_run_options_that_could_only_misbehave_are_refused_by_name() -> None:
    agent = AgentBuilder().with_chat_client(ScriptedChatClient(["never"])).build()
    with pytest.raises(ConfigurationError) as caught:
        await agent.run("go", options=AgentRunOptions(tool_timeout=-1))
    assert caught.value.key_path == "AgentRunOptions(tool_timeout=...)"
    bad = AgentRunOptions(usage_limits={"requests": 1})  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="expected UsageLimits"):
        await agent.run("go", options=bad)
