"""A stored session's last turn becomes a case that runs again."""

from __future__ import annotations

from pathlib import Path

from raf import Agent, tool
from raf.agent.history import InMemoryHistoryProvider
from raf.agent.stores import JsonDirectorySessionStore
from raf.evals import Dataset, ToolCalls, case_from_session
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
