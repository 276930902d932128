"""What people coming from other frameworks write first: a model string for the client and
plain functions as tools. Both work, or fail when the agent is built, saying why."""

from __future__ import annotations

import pytest

from raf import Agent, AgentBuilder, ConfigurationError
from raf.clients.errors import MissingApiKeyError
from raf.clients.openai.client import OpenAIChatClient
from raf.core.contents import FunctionResultContent
from raf.core.errors import RafError
from raf.testing import ScriptedChatClient, call, reply


def add(a: int, b: int) -> int:
    """Add two whole numbers."""
    return a + b


def test_a_model_string_resolves_as_resolve_model_does(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    agent = Agent(chat_client="openai:gpt-4o-mini")
    built = AgentBuilder("a").with_chat_client("openai:gpt-4o-mini").build()
    for client in (agent.leaf_client, built.leaf_client):
        assert isinstance(getattr(client, "inner", client), OpenAIChatClient), client


def test_a_model_string_that_cannot_resolve_is_refused_when_built(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigurationError, match="did you mean openai:gpt-4o"):
        Agent(chat_client="opnai:gpt-4o")
    with pytest.raises(ConfigurationError, match="did you mean openai:gpt-4o"):
        AgentBuilder().with_chat_client("opnai:gpt-4o")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(MissingApiKeyError, match="set the OPENAI_API_KEY environment variable"):
        Agent(chat_client="openai:gpt-4o")


async def test_a_plain_function_is_a_tool_described_by_its_hints_and_docstring() -> None:
    model = ScriptedChatClient([reply("", call("add", a=2, b=3)), "5"])
    agent = Agent(chat_client=model, tools=[add])
    (tool,) = agent.tools
    assert tool.name == "add" and tool.description == "Add two whole numbers."
    assert tool.parameters["properties"] == {
        "a": {"type": "integer"},
        "b": {"type": "integer"},
    }
    response = await agent.run("2 + 3?")
    assert response.text == "5"
    (result,) = model.requests[1].messages[-1].contents
    assert isinstance(result, FunctionResultContent) and result.result == 5


def test_a_class_or_a_value_is_no_tool_and_the_error_names_tool() -> None:
    for wrong in (int, 42):
        with pytest.raises(RafError, match="@tool"):
            Agent(chat_client=ScriptedChatClient(), tools=[wrong])  # type: ignore[list-item]
