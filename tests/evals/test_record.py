"""A stored session's last turn becomes a case that runs again."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf import Agent, tool
from raf.agent.history import InMemoryHistoryProvider
from raf.core.contents import ApprovalResponseContent, FunctionResultContent, TextContent
from raf.core.messages import ChatMessage, Role
from raf.evals import Dataset, ToolCalls, case_from_messages, case_from_session
from raf.evals.record import turn_starts
from raf.stores.sessions import JsonDirectorySessionStore
from raf.testing import ScriptedChatClient, call, reply


@tool
def add(a: int, b: int) -> int:
    """Add."""
    return a + b


async def test_a_stored_session_becomes_a_case(tmp_path: Path) -> None:
    store = JsonDirectorySessionStore(tmp_path)
    model = ScriptedChatClient([reply("", call("add", a=2, b=3)), "It is 5."])
    agent = Agent(
        chat_client=model,
        tools=[add],
        session_store=store,
        context_providers=[InMemoryHistoryProvider()],
    )
    response = await agent.run("What is 2+3?")
    assert response.session_id is not None
    session = await store.load(response.session_id)
    assert session is not None
    case = case_from_session(session, name="add", tags=["recorded"])
    assert case.input == "What is 2+3?" and case.expected_output == "It is 5."
    assert [(c.name, c.arguments) for c in case.expected_tool_calls] == [("add", {"a": 2, "b": 3})]
    assert isinstance(case.evaluators[0], ToolCalls)

    dataset = Dataset(cases=[case], name="recorded")
    saved = Dataset.from_file(dataset.save(tmp_path / "recorded.yaml"))
    again = ScriptedChatClient([reply("", call("add", a=2, b=3)), "It is 5."])
    report = await saved.evaluate(Agent(chat_client=again, tools=[add]), progress=False)
    assert report.results[0].passed, report.table()
    wrong = ScriptedChatClient([reply("", call("add", a=2, b=2)), "It is 4."])
    report = await saved.evaluate(Agent(chat_client=wrong, tools=[add]), progress=False)
    assert report.results[0].status == "failed"


def conversation() -> list[ChatMessage]:
    """Three turns: a plain answer, a tool call, and a call approved by a person."""
    return [
        ChatMessage.user("Hi"),
        ChatMessage(role=Role.ASSISTANT, contents=[TextContent(text="Hello.")]),
        ChatMessage.user("What is 2+3?"),
        ChatMessage(role=Role.ASSISTANT, contents=[call("add", a=2, b=3, call_id="c1")]),
        ChatMessage(role=Role.TOOL, contents=[FunctionResultContent(call_id="c1", result=5)]),
        ChatMessage(role=Role.ASSISTANT, contents=[TextContent(text="It is 5.")]),
        ChatMessage.user("And 1+1?"),
        ChatMessage(role=Role.ASSISTANT, contents=[call("add", a=1, b=1, call_id="c2")]),
        ChatMessage(
            role=Role.USER, contents=[ApprovalResponseContent(call_id="c2", approved=True)]
        ),
        ChatMessage(role=Role.TOOL, contents=[FunctionResultContent(call_id="c2", result=2)]),
        ChatMessage(role=Role.ASSISTANT, contents=[TextContent(text="It is 2.")]),
    ]


def test_each_turn_of_a_conversation_becomes_its_own_case() -> None:
    messages = conversation()
    assert turn_starts(messages) == [0, 2, 6]  # the approval answer goes on with its turn
    first = case_from_messages(messages, name="hi", turn=0)
    assert first.input == "Hi" and first.expected_output == "Hello."
    assert first.expected_tool_calls == [] and first.evaluators == []
    second = case_from_messages(messages, name="add", turn=1)
    assert [m.text for m in second.input] == ["Hi", "Hello.", "What is 2+3?"]
    assert second.expected_output == "It is 5."
    assert [c.to_dict() for c in second.expected_tool_calls] == [
        {"name": "add", "arguments": {"a": 2, "b": 3}}
    ]
    last = case_from_messages(messages, name="last", turn=-1)
    assert last.expected_output == "It is 2."
    assert [c.arguments for c in last.expected_tool_calls] == [{"a": 1, "b": 1}]
    # the earlier turn's call and result are not in the input: only what was said
    assert [m.text for m in last.input] == ["Hi", "Hello.", "What is 2+3?", "It is 5.", "And 1+1?"]
    assert all(not m.function_calls and m.role is not Role.TOOL for m in last.input)
    assert case_from_messages(messages, name="x").expected_output == last.expected_output


def test_a_turn_out_of_range_is_named() -> None:
    with pytest.raises(IndexError, match=r"'x': there is no turn 3; the transcript has 3 turn"):
        case_from_messages(conversation(), name="x", turn=3)
    with pytest.raises(IndexError, match="no turn -4"):
        case_from_messages(conversation(), name="x", turn=-4)
    with pytest.raises(IndexError, match="has 0 turn"):
        case_from_messages([], name="x", turn=0)
