"""A cancelled run ends with `cancelled` and leaves no call without a result."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from raf import (
    AgentBuilder,
    AgentResponseUpdate,
    AgentRunOptions,
    CancellationToken,
    FinishReason,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply


def _consistent(session_messages: list) -> bool:  # type: ignore[type-arg]
    calls = {c.call_id for m in session_messages for c in m.function_calls}
    results = {r.call_id for m in session_messages for r in m.function_results}
    return calls == results


async def test_cancel_during_a_tool_round_repairs_the_transcript() -> None:
    token = CancellationToken()

    @tool
    async def slow(n: int) -> int:
        """Takes a while."""
        await asyncio.sleep(5)
        return n

    model = ScriptedChatClient(
        [reply("", call("slow", n=1, call_id="a"), call("slow", n=2, call_id="b"))]
    )
    agent = AgentBuilder().with_chat_client(model).with_tool(slow).build()
    session = agent.create_session()
    asyncio.get_running_loop().call_later(0.1, token.cancel)
    response = await asyncio.wait_for(
        agent.run("go", session=session, options=AgentRunOptions(cancellation=token)), 3
    )
    assert response.finish_reason is FinishReason.CANCELLED
    assert _consistent(session.messages)
    errors = [r.error for m in session.messages for r in m.function_results]
    assert errors and all("cancelled" in (e or "") for e in errors)


async def test_token_cancelled_before_the_run_calls_no_model() -> None:
    token = CancellationToken()
    token.cancel()
    model = ScriptedChatClient(["never"])
    agent = AgentBuilder().with_chat_client(model).build()
    response = await agent.run("go", options=AgentRunOptions(cancellation=token))
    assert response.finish_reason is FinishReason.CANCELLED
    assert model.requests == []


async def test_cancel_between_model_and_tools_gives_cancelled_results() -> None:
    token = CancellationToken()
    ran: list[int] = []

    @tool
    def work(n: int) -> int:
        """Records that it ran."""
        ran.append(n)
        return n

    class CancellingModel(ScriptedChatClient):
        async def get_response(self, messages, options=None):
            response = await super().get_response(messages, options)
            token.cancel("user pressed Ctrl-C")
            return response

    model = CancellingModel([reply("", call("work", n=1, call_id="w"))])
    agent = AgentBuilder().with_chat_client(model).with_tool(work).build()
    session = agent.create_session()
    response = await agent.run("go", session=session, options=AgentRunOptions(cancellation=token))
    assert response.finish_reason is FinishReason.CANCELLED
    assert ran == []
    assert _consistent(session.messages)


async def test_cancelled_stream_is_consistent_too() -> None:
    token = CancellationToken()

    @tool
    async def slow() -> str:
        """Slow."""
        await asyncio.sleep(5)
        return "x"

    model = ScriptedChatClient([reply("", call("slow", call_id="s"))])
    agent = AgentBuilder().with_chat_client(model).with_tool(slow).build()
    session = agent.create_session()
    asyncio.get_running_loop().call_later(0.1, token.cancel)
    updates = [
        u
        async for u in agent.run_stream(
            "go", session=session, options=AgentRunOptions(cancellation=token)
        )
    ]
    assert updates[-1].finish_reason is FinishReason.CANCELLED
    assert _consistent(session.messages)


async def test_a_stalled_streaming_model_is_abandoned_when_cancelled() -> None:
    token = CancellationToken()
    model = ScriptedChatClient(["too late"], delay=30)
    agent = AgentBuilder().with_chat_client(model).build()
    session = agent.create_session()
    asyncio.get_running_loop().call_later(0.1, token.cancel)
    stream = agent.run_stream("go", session=session, options=AgentRunOptions(cancellation=token))
    updates = await asyncio.wait_for(_collect(stream), 5)
    assert updates[-1].finish_reason is FinishReason.CANCELLED
    assert not any(u.text == "too late" for u in updates)


async def _collect(stream: AsyncIterator[AgentResponseUpdate]) -> list[AgentResponseUpdate]:
    return [u async for u in stream]
