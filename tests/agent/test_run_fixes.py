"""Per-run tools are offered, a long stream leaves no callbacks on the token, and the
streamed `text` is only the visible answer."""

from __future__ import annotations

from raf import (
    AgentBuilder,
    AgentRunOptions,
    CancellationToken,
    ChatMessage,
    ChatOptions,
    ReasoningContent,
    TextContent,
    UpdateKind,
    tool,
)
from raf.testing import ScriptedChatClient, call, reply


@tool
def shout(text: str) -> str:
    """Say it louder."""
    return text.upper()


@tool
def whisper(text: str) -> str:
    """Say it softer."""
    return text.lower()


async def test_tools_passed_per_run_are_offered_and_run() -> None:
    model = ScriptedChatClient([reply("", call("shout", text="hi", call_id="c1")), "done"])
    agent = AgentBuilder().with_chat_client(model).with_tool(whisper).build()
    options = AgentRunOptions(chat_options=ChatOptions(tools=[shout]))
    response = await agent.run("go", options=options)
    assert response.text == "done"
    assert sorted(model.requests[0].tool_names) == ["shout", "whisper"]
    assert model.requests[1].messages[-1].function_results[0].result == "HI"


async def test_tools_passed_per_run_work_on_an_agent_without_tools() -> None:
    model = ScriptedChatClient([reply("", call("shout", text="a", call_id="c1")), "ok"])
    agent = AgentBuilder().with_chat_client(model).build()
    options = AgentRunOptions(chat_options=ChatOptions(tools=[shout]))
    assert (await agent.run("go", options=options)).text == "ok"
    assert model.requests[0].tool_names == ["shout"]


async def test_a_long_stream_leaves_no_callback_on_the_token() -> None:
    token = CancellationToken()
    model = ScriptedChatClient(["x" * 500], chunk_size=1)
    agent = AgentBuilder().with_chat_client(model).build()
    updates = [u async for u in agent.run_stream("go", options=AgentRunOptions(cancellation=token))]
    assert sum(u.kind is UpdateKind.TEXT_DELTA for u in updates) == 500
    assert token._callbacks == []


async def test_a_stream_with_tool_rounds_leaves_no_callback_on_the_token() -> None:
    token = CancellationToken()
    model = ScriptedChatClient([reply("", call("shout", text="a" * 40)), "b" * 100], chunk_size=2)
    agent = AgentBuilder().with_chat_client(model).with_tool(shout).build()
    async for _ in agent.run_stream("go", options=AgentRunOptions(cancellation=token)):
        pass
    assert token._callbacks == []


async def test_stream_text_is_the_final_text_without_arguments_or_reasoning() -> None:
    thinking = ChatMessage.assistant("")
    thinking.contents = [
        ReasoningContent(text="I should call shout."),
        *reply("", call("shout", text="quiet words", call_id="c1")).contents,
    ]
    answer = ChatMessage.assistant("")
    answer.contents = [ReasoningContent(text="Now answer."), TextContent(text="QUIET WORDS, said.")]
    model = ScriptedChatClient([thinking, answer], chunk_size=3)
    agent = AgentBuilder().with_chat_client(model).with_tool(shout).build()
    session = agent.create_session()
    updates = [u async for u in agent.run_stream("go", session=session)]
    streamed = "".join(u.text for u in updates)
    assert streamed == "QUIET WORDS, said." == session.messages[-1].text
    reasoning = "".join(u.reasoning for u in updates)
    assert reasoning == "I should call shout.Now answer."
    arguments = "".join(u.arguments_delta for u in updates)
    assert arguments == '{"text": "quiet words"}'
    stored = [c for m in session.messages for c in m.contents if isinstance(c, ReasoningContent)]
    assert [r.text for r in stored] == ["I should call shout.", "Now answer."]


def test_an_update_built_the_old_way_keeps_text_visible_only() -> None:
    from raf import AgentResponseUpdate

    old_reasoning = AgentResponseUpdate(kind=UpdateKind.REASONING_DELTA, text="hmm")
    old_arguments = AgentResponseUpdate(kind=UpdateKind.TOOL_CALL_ARGUMENTS_DELTA, text='{"a"')
    assert (old_reasoning.text, old_reasoning.reasoning) == ("", "hmm")
    assert (old_arguments.text, old_arguments.arguments_delta) == ("", '{"a"')
    back = AgentResponseUpdate.from_dict(old_reasoning.to_dict())
    assert back.reasoning == "hmm" and back.text == ""
