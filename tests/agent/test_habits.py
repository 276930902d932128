"""The habits of other frameworks meet messages that say what to write in raf; a result
prints as its answer; a run whose model answered nothing says so."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from raf import Agent, AgentBuilder, ToolDefinitionError, tool
from raf.testing import ScriptedChatClient


def model() -> ScriptedChatClient:
    return ScriptedChatClient(["Hello."])


def test_a_positional_model_string_says_to_give_it_as_chat_client() -> None:
    with pytest.raises(TypeError, match=r"write Agent\(chat_client='openai:gpt-4o', \.\.\.\)"):
        Agent("openai:gpt-4o")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match=r"Agent\(chat_client=\.\.\., \.\.\.\)"):
        Agent(model())  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="takes its settings by keyword, got 2"):
        Agent(1, 2)  # type: ignore[call-arg, arg-type]


@pytest.mark.parametrize(
    ("keyword", "instead"),
    [
        ("model", "chat_client='openai:gpt-4o'"),
        ("client", "chat_client='openai:gpt-4o'"),
        ("system_prompt", "instructions='openai:gpt-4o'"),
        ("response_format", "output_type='openai:gpt-4o'"),
    ],
)
def test_a_keyword_of_another_framework_names_raf_s(keyword: str, instead: str) -> None:
    with pytest.raises(TypeError, match=rf"no argument '{keyword}': write {instead} instead"):
        kwargs: dict[str, Any] = {keyword: "openai:gpt-4o"}
        Agent(**kwargs)


def test_a_client_object_given_as_client_is_not_printed_whole() -> None:
    with pytest.raises(TypeError, match=r"write chat_client=\.\.\. instead \(a model string"):
        Agent(client=model())  # type: ignore[call-arg]


def test_a_misspelt_keyword_gets_the_nearest_and_the_rest_python_s_own() -> None:
    with pytest.raises(TypeError, match="no argument 'intructions'; did you mean instructions"):
        Agent(chat_client=model(), intructions="Be brief.")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="unexpected keyword argument 'zzzz'"):
        Agent(chat_client=model(), zzzz=1)  # type: ignore[call-arg]


def test_every_keyword_of_the_constructor_still_binds() -> None:
    agent = Agent(chat_client=model(), instructions="Be brief.", name="a", output_retries=2)
    assert agent.instructions == "Be brief." and agent.output_retries == 2


def test_a_lambda_as_a_tool_says_why_and_shows_the_function_to_write() -> None:
    for attempt in (
        lambda: Agent(chat_client=model(), tools=[lambda city: city]),
        lambda: AgentBuilder().with_tool(lambda city: city),
        lambda: tool(lambda city: city),
    ):
        with pytest.raises(ToolDefinitionError) as caught:
            attempt()
        text = str(caught.value)
        assert "is a lambda" in text and "type hints" in text, text
        assert "def get_weather(city: str) -> str:" in text and "tools=[get_weather]" in text


async def test_str_of_a_response_is_its_answer_and_repr_the_whole() -> None:
    response = await Agent(chat_client=model()).run("Hi")
    assert str(response) == "Hello." and f"{response}" == "Hello."
    assert repr(response).startswith("AgentResponse(messages=[")
    assert "finish_reason=<FinishReason.STOP" in repr(response)


async def test_an_empty_answer_is_flagged_on_the_result_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    agent = Agent(chat_client=ScriptedChatClient(["  "]), name="quiet")
    with caplog.at_level(logging.WARNING, logger="raf.agent"):
        response = await agent.run("Hi")
    problem = response.answer_problem
    assert problem is not None and problem.code == "empty_answer"
    warned = [r for r in caplog.records if r.name == "raf.agent"]
    assert len(warned) == 1
    assert "agent 'quiet': the model finished without an answer" in warned[0].getMessage()


async def test_a_whole_answer_has_no_problem_and_logs_nothing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with caplog.at_level(logging.WARNING, logger="raf.agent"):
        response = await Agent(chat_client=model()).run("Hi")
    assert response.answer_problem is None
    assert not [r for r in caplog.records if r.name == "raf.agent"]
