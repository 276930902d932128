"""The request is joined once from what providers return; nothing they return changes."""

from __future__ import annotations

from raf import AgentBuilder, ChatMessage, ContextResult, tool
from raf.testing import ScriptedChatClient, call, reply
from tests.agent.helpers import RecordingProvider


@tool
def echo(text: str) -> str:
    """Returns its text."""
    return text


async def test_the_lists_providers_return_stay_as_they_were_after_a_run_with_tools() -> None:
    injected = [ChatMessage.user("remember this")]
    provider = RecordingProvider("p", ContextResult(messages=injected), [])
    model = ScriptedChatClient([reply("", call("echo", text="x")), "done", "again"])
    agent = (
        AgentBuilder()
        .with_instructions("Be brief.")
        .with_chat_client(model)
        .with_tool(echo)
        .with_context_provider(provider)
        .build()
    )
    session = agent.create_session()
    await agent.run("first", session=session)
    stored = list(session.messages)
    await agent.run("second", session=session)
    assert [m.text for m in injected] == ["remember this"]
    first, last = model.requests[0], model.requests[-1]
    assert [m.text for m in first.messages] == ["Be brief.", "remember this", "first"]
    # the second run saw the stored turn (history first), the injected message, the request
    assert last.messages[1 : 1 + len(stored)] == stored
    assert [m.text for m in last.messages[1 + len(stored) : 3 + len(stored)]] == [
        "remember this",
        "second",
    ]
    assert len(session.messages) == len(stored) + 2  # "second" and "again"


async def test_tools_replaced_on_the_agent_after_building_are_the_ones_offered() -> None:
    @tool
    def other(text: str) -> str:
        """Another tool."""
        return text

    model = ScriptedChatClient([reply("", call("other", text="x", call_id="o")), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(echo).build()
    agent.tools = (other,)
    response = await agent.run("go")
    assert model.requests[0].tool_names == ["other"]
    (result,) = response.messages[1].function_results
    assert (result.result, result.error) == ("x", None)
