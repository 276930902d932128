"""Cancellation ends an orchestration cancelled; closing its agent closes the members."""

from __future__ import annotations

import asyncio

from raf import AgentBuilder, AgentRunOptions, BaseContextProvider, FinishReason
from raf.core.cancellation import CancellationToken
from raf.orchestrations import GroupChatOrchestration, SequentialOrchestration
from raf.testing import FunctionChatClient

from .helpers import member


async def test_a_cancelled_member_ends_the_orchestration_cancelled():
    token = CancellationToken()

    async def slow(messages, options):
        await asyncio.sleep(5)
        return "never"

    first, _ = member("first", "one")
    slowpoke = AgentBuilder("slow").with_chat_client(FunctionChatClient(slow)).build()
    last, lc = member("last", "three")
    agent = SequentialOrchestration([first, slowpoke, last]).as_agent()
    asyncio.get_running_loop().call_later(0.05, token.cancel)
    session = agent.create_session()
    response = await asyncio.wait_for(
        agent.run("go", session=session, options=AgentRunOptions(cancellation=token)), 3
    )
    assert response.finish_reason is FinishReason.CANCELLED
    assert [m.author_name for m in response.messages] == ["first"]
    assert lc.requests == [] and session.provider_state == {}


class Closing(BaseContextProvider):
    """A provider that records being closed."""

    def __init__(self) -> None:
        self.closed = False

    async def aclose(self) -> None:
        self.closed = True


async def test_closing_the_agent_closes_members_and_the_coordinator():
    providers = [Closing(), Closing(), Closing()]
    agents = [
        AgentBuilder(name)
        .with_chat_client(FunctionChatClient(lambda m, o: "x"))
        .with_context_provider(p)
        .build()
        for name, p in zip(["a", "b", "boss"], providers, strict=True)
    ]
    chat = GroupChatOrchestration(agents[:2], selector=agents[2])
    async with chat.as_agent():
        pass
    assert [p.closed for p in providers] == [True, True, True]


async def test_the_programs_close_an_orchestration_agents_members():
    from raf.cli._agents import close_agent

    providers = [Closing(), Closing()]
    agents = [
        AgentBuilder(name)
        .with_chat_client(FunctionChatClient(lambda m, o: "x"))
        .with_context_provider(p)
        .build()
        for name, p in zip(["a", "manager"], providers, strict=True)
    ]
    from raf.orchestrations import MagenticOrchestration

    await close_agent(MagenticOrchestration(agents[1], [agents[0]]).as_agent())
    assert [p.closed for p in providers] == [True, True]


async def test_the_orchestration_as_a_chat_client_runs_it_on_the_messages():
    from raf import ChatMessage, ChatOptions
    from raf.core.responses import fold_stream
    from raf.orchestrations import OrchestrationChatClient

    a, _ = member("a", "alpha", "alpha again")
    b, bc = member("b", "beta", "beta again")
    client = OrchestrationChatClient(SequentialOrchestration([a, b]))
    response = await client.get_response(
        [ChatMessage.system("ignored"), ChatMessage.user("go")], ChatOptions()
    )
    assert [m.author_name for m in response.messages] == ["a", "b"]
    assert bc.requests[0].messages[-1].text == "alpha"
    streamed = await fold_stream(
        client.get_streaming_response([ChatMessage.user("again")], ChatOptions())
    )
    assert streamed.text == "beta again"
