"""A tool raising KeyboardInterrupt, SystemExit or another BaseException cancels its
sibling calls and leaves `agent.run` with that exception; the process lives on."""

from __future__ import annotations

import asyncio

import pytest

from raf import Agent, AgentBuilder, AgentRunOptions, CancellationToken, ContextResult, tool
from raf.testing import ScriptedChatClient, call, reply
from tests.agent.helpers import RecordingProvider


class Abort(BaseException):
    """A BaseException that is neither KeyboardInterrupt nor SystemExit."""


SIBLING: list[str] = []


@tool
async def sibling(n: int) -> int:
    """Takes its time."""
    SIBLING.append("started")
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        SIBLING.append("cancelled")
        raise
    return n


@tool
async def aborting(kind: str) -> str:
    """Raises the BaseException it is asked for."""
    await asyncio.sleep(0.01)
    if kind == "interrupt":
        raise KeyboardInterrupt
    if kind == "exit":
        raise SystemExit(3)
    raise Abort("stop everything")


@tool
def aborting_in_a_thread(kind: str) -> str:
    """A sync tool (run in a worker thread) that raises KeyboardInterrupt."""
    raise KeyboardInterrupt


def _agent(name: str, kind: str, log: list[str]) -> tuple[Agent, RecordingProvider]:
    model = ScriptedChatClient(
        [reply("", call("sibling", n=1, call_id="s"), call(name, kind=kind, call_id="a")), "x"]
    )
    provider = RecordingProvider("p", ContextResult(), log)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tools([sibling, aborting, aborting_in_a_thread])
        .with_context_provider(provider)
        .build()
    )
    return agent, provider


@pytest.mark.parametrize(
    ("name", "kind", "expected"),
    [
        ("aborting", "other", Abort),
        ("aborting", "exit", SystemExit),
        ("aborting", "interrupt", KeyboardInterrupt),
        ("aborting_in_a_thread", "interrupt", KeyboardInterrupt),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("token", [False, True])
async def test_a_base_exception_in_a_batch_cancels_siblings_and_leaves_the_run(
    name: str, kind: str, expected: type[BaseException], stream: bool, token: bool
) -> None:
    SIBLING.clear()
    log: list[str] = []
    agent, provider = _agent(name, kind, log)
    options = AgentRunOptions(cancellation=CancellationToken() if token else None)
    session = agent.create_session()
    with pytest.raises(expected):
        if stream:
            async for _ in agent.run_stream("go", session=session, options=options):
                pass
        else:
            # awaited directly: asyncio stops the loop when SystemExit or KeyboardInterrupt
            # leaves any task, so wrapping this in wait_for would end the test process
            await agent.run("go", session=session, options=options)
    assert SIBLING == ["started", "cancelled"]
    assert session.messages == []  # nothing of the failed turn is stored
    response, error = provider.invoked_with[-1]
    assert response is None and isinstance(error, expected)


async def test_a_lone_call_raising_a_base_exception_leaves_the_run() -> None:
    model = ScriptedChatClient([reply("", call("aborting", kind="other", call_id="a")), "x"])
    agent = AgentBuilder().with_chat_client(model).with_tool(aborting).build()
    with pytest.raises(Abort, match="stop everything"):
        await agent.run("go")
