"""Tools the caller declares and runs (`ClientTool`): the model is offered them beside
the agent's own; a call of one ends the run with the call handed back, after the agent's
own calls of the same batch ran; the caller continues with the result."""

from __future__ import annotations

from raf.agent.agent import Agent
from raf.agent.builder import AgentBuilder
from raf.core.client_tool import ClientTool
from raf.core.contents import FunctionCallContent, FunctionResultContent
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage, Role
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import FinishReason, UpdateKind
from raf.testing import ScriptedChatClient, call, reply

LOOKUP = ClientTool(
    name="lookup",
    description="Look a word up (the caller's own function).",
    parameters={"type": "object", "properties": {"word": {"type": "string"}}},
)


def options() -> AgentRunOptions:
    return AgentRunOptions(chat_options=ChatOptions(tools=[LOOKUP]))


def build(model: ScriptedChatClient, ran: list[str]) -> Agent:
    @tool(name="weather", description="The weather in a city.")
    def weather(city: str) -> str:
        ran.append(city)
        return f"sunny in {city}"

    return AgentBuilder().with_chat_client(model).with_tool(weather).build()


async def test_a_client_call_is_handed_back_after_the_agents_own_calls_ran() -> None:
    ran: list[str] = []
    both = reply(
        "Let me check.",
        call("weather", call_id="c1", city="Paris"),
        call("lookup", call_id="c2", word="sunny"),
    )
    model = ScriptedChatClient([both])
    agent = build(model, ran)
    session = agent.create_session()
    response = await agent.run("weather?", session=session, options=options())
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert ran == ["Paris"] and len(model.requests) == 1
    assert [t.name for t in model.requests[0].options.tools] == ["weather", "lookup"]
    handed = [
        c for m in response.messages for c in m.contents if isinstance(c, FunctionCallContent)
    ]
    results = [
        c for m in response.messages for c in m.contents if isinstance(c, FunctionResultContent)
    ]
    assert [c.call_id for c in handed] == ["c1", "c2"]
    assert [r.call_id for r in results] == ["c1"]  # the client's call waits for its result
    # the caller runs it and goes on: the session keeps every call and result in order
    model.add("Sunny means bright.")
    result = ChatMessage(
        role=Role.TOOL,
        contents=[FunctionResultContent(call_id="c2", name="lookup", result="bright")],
    )
    done = await agent.run([result], session=session, options=options())
    assert done.text == "Sunny means bright." and done.finish_reason is FinishReason.STOP
    sent = model.requests[1].messages
    ids = [
        (m.role, c.call_id)
        for m in sent
        for c in m.contents
        if isinstance(c, FunctionCallContent | FunctionResultContent)
    ]
    assert ids == [
        (Role.ASSISTANT, "c1"),
        (Role.ASSISTANT, "c2"),
        (Role.TOOL, "c1"),
        (Role.TOOL, "c2"),
    ]


async def test_a_structured_run_hands_back_without_checking_the_answer() -> None:
    model = ScriptedChatClient([reply("", call("lookup", call_id="c9", word="x"))])
    agent = build(model, [])
    run = AgentRunOptions(chat_options=ChatOptions(tools=[LOOKUP]), output_type=dict[str, int])
    response = await agent.run("go", options=run)
    assert response.finish_reason is FinishReason.TOOL_CALLS and response.value is None


async def test_a_streamed_run_hands_back_the_call_and_never_runs_it() -> None:
    model = ScriptedChatClient([reply("", call("lookup", call_id="c3", word="x"))])
    agent = build(model, [])
    updates = [u async for u in agent.run_stream("go", options=options())]
    assert not [u for u in updates if u.kind is UpdateKind.TOOL_CALLED]
    ended = [u.content for u in updates if isinstance(u.content, FunctionCallContent)]
    assert [c.call_id for c in ended] == ["c3"]
    assert updates[-1].finish_reason is FinishReason.TOOL_CALLS
