"""A batch's sync calls share the tool pool and one wake-up of the event loop; a held
sync call that fails still stops its siblings at once."""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest

from raf import AgentBuilder, AgentRunOptions, CancellationToken, tool
from raf.testing import ScriptedChatClient, call, reply

BARRIER = threading.Barrier(3, timeout=10)
SIBLING: list[str] = []


@tool
def meet(n: int) -> int:
    """Waits until three calls run at once (fails when they do not)."""
    BARRIER.wait()
    return n * 10


@tool
def interrupt_in_a_thread() -> str:
    """Raises KeyboardInterrupt in its worker thread."""
    raise KeyboardInterrupt


@tool
async def sibling() -> str:
    """Takes its time."""
    SIBLING.append("started")
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        SIBLING.append("cancelled")
        raise
    return "late"


def _meeting_model() -> ScriptedChatClient:
    calls = [call("meet", n=n, call_id=f"m{n}") for n in (1, 2, 3)]
    return ScriptedChatClient([reply("", *calls), "done"])


def test_sync_calls_of_a_batch_run_at_once_and_wake_the_loop_once() -> None:
    BARRIER.reset()
    # a loop of its own: no thread left over by another test can wake it
    loop = asyncio.new_event_loop()
    wakes: list[Any] = []
    original = loop.call_soon_threadsafe

    def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
        wakes.append(callback)
        return original(callback, *args, **kwargs)

    setattr(loop, "call_soon_threadsafe", counting)  # noqa: B010
    agent = AgentBuilder().with_chat_client(_meeting_model()).with_tool(meet).build()
    try:
        response = loop.run_until_complete(agent.run("go"))
    finally:
        loop.close()
    assert response.text == "done"
    results = response.messages[1].function_results
    assert [(r.call_id, r.result) for r in results] == [("m1", 10), ("m2", 20), ("m3", 30)]
    # one wake-up for the batch, or none when every call was done before the loop looked
    # (three calls each woken on their own would be three)
    assert len(wakes) <= 1, wakes


@pytest.mark.parametrize("token", [False, True])
async def test_sync_calls_run_at_once_with_a_token_too(token: bool) -> None:
    BARRIER.reset()
    agent = AgentBuilder().with_chat_client(_meeting_model()).with_tool(meet).build()
    options = AgentRunOptions(cancellation=CancellationToken() if token else None)
    response = await agent.run("go", options=options)
    assert [r.result for r in response.messages[1].function_results] == [10, 20, 30]


@pytest.mark.parametrize("stream", [False, True])
async def test_a_held_sync_call_raising_stops_a_waiting_sibling_at_once(stream: bool) -> None:
    SIBLING.clear()
    model = ScriptedChatClient(
        [reply("", call("interrupt_in_a_thread", call_id="a"), call("sibling", call_id="s")), "x"]
    )
    agent = (
        AgentBuilder().with_chat_client(model).with_tools([interrupt_in_a_thread, sibling]).build()
    )
    session = agent.create_session()
    with pytest.raises(KeyboardInterrupt):
        if stream:
            async for _ in agent.run_stream("go", session=session):
                pass
        else:
            await agent.run("go", session=session)
    assert SIBLING == ["started", "cancelled"]
    assert session.messages == []


def _loop_visits(calls: int) -> int:
    """How many callbacks a run with one batch of `calls` sync calls schedules on its
    event loop (each call waits until the loop runs, so the batch is never done before
    it is sealed)."""
    loop = asyncio.new_event_loop()
    scheduled: list[Any] = []
    original = loop.call_soon

    def counting(callback: Any, *args: Any, **kwargs: Any) -> Any:
        scheduled.append(callback)
        return original(callback, *args, **kwargs)

    @tool
    def after_the_loop(n: int) -> int:
        """Returns once the event loop has run a callback of its own."""
        ran = threading.Event()
        loop.call_soon_threadsafe(ran.set)
        if not ran.wait(10):
            raise AssertionError("the event loop was held")
        return n

    setattr(loop, "call_soon", counting)  # noqa: B010
    batch = [call("after_the_loop", n=n, call_id=f"c{n}") for n in range(calls)]
    model = ScriptedChatClient([reply("", *batch), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(after_the_loop).build()
    try:
        response = loop.run_until_complete(agent.run("go"))
    finally:
        loop.close()
    assert [r.result for r in response.messages[1].function_results] == list(range(calls))
    return len(scheduled)


def test_a_batch_of_sync_calls_costs_the_loop_the_same_whatever_its_size() -> None:
    # once the batch's wake-up has come, each held call goes on at once: none takes a
    # trip of its own through the event loop
    assert _loop_visits(3) == _loop_visits(1)
