"""`Agent(...)` takes what `AgentBuilder` offers: guardrails of every kind, an
instructions template as text, output validators; both build the same agent."""

from __future__ import annotations

import pytest

from raf import (
    Agent,
    AgentBuilder,
    ConfigurationError,
    GuardrailResult,
    InputGuardrailTripped,
    OutputGuardrailTripped,
    ToolGuardrail,
)
from raf.core.contents import FunctionResultContent
from raf.core.middleware import FunctionInvocationContext
from raf.testing import ScriptedChatClient, call, reply


def no_passwords(text: str) -> GuardrailResult:
    return (
        GuardrailResult.trip("mentions a password")
        if "password" in text
        else (GuardrailResult.passed())
    )


def refuse_deletes(context: FunctionInvocationContext) -> GuardrailResult:
    return GuardrailResult.trip("deleting is not allowed")


def delete(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


async def test_input_and_output_guardrails_on_the_constructor() -> None:
    client = ScriptedChatClient(["the password is hunter2", "fine"])
    agent = Agent(
        chat_client=client, input_guardrails=[no_passwords], output_guardrails=[no_passwords]
    )
    with pytest.raises(InputGuardrailTripped, match="mentions a password"):
        await agent.run("what is my password?")
    assert client.requests == []
    with pytest.raises(OutputGuardrailTripped, match="mentions a password"):
        await agent.run("hello")


async def test_a_tool_guardrail_on_the_constructor_refuses_the_call() -> None:
    client = ScriptedChatClient([reply("", call("delete", path="a.txt")), "Could not."])
    agent = Agent(
        chat_client=client,
        tools=[delete],
        tool_guardrails=[ToolGuardrail(before=refuse_deletes)],
    )
    response = await agent.run("delete a.txt")
    results = [c for m in response.messages for c in m.contents]
    errors = [c.error or "" for c in results if isinstance(c, FunctionResultContent)]
    assert len(errors) == 1 and "deleting is not allowed" in errors[0]


def test_a_tool_guardrail_that_is_not_one_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="expected ToolGuardrail objects"):
        Agent(chat_client=ScriptedChatClient(["x"]), tool_guardrails=[refuse_deletes])  # type: ignore[list-item]


async def test_an_instructions_template_may_be_text() -> None:
    client = ScriptedChatClient(["x"])
    agent = Agent(chat_client=client, instructions_template="Help {{customer}}.")
    await agent.run("Hi", variables={"customer": "Ada"})
    assert client.requests[0].messages[0].text == "Help Ada."


async def test_the_builder_and_the_constructor_give_the_same_guardrail_middleware() -> None:
    built = AgentBuilder().with_chat_client(ScriptedChatClient(["x"]))
    built = built.with_input_guardrail(no_passwords).with_output_guardrail(no_passwords)
    from_builder = built.build()
    direct = Agent(
        chat_client=ScriptedChatClient(["x"]),
        input_guardrails=[no_passwords],
        output_guardrails=[no_passwords],
    )
    shape = [len(from_builder.middleware.agent), len(from_builder.middleware.function)]
    assert shape == [len(direct.middleware.agent), len(direct.middleware.function)] == [1, 0]
