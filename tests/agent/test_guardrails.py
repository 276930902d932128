"""Input, output and tool guardrails: functions and agents, tripwires that end the run
with a typed error and store nothing, refusals and redactions the model reads."""

from __future__ import annotations

from typing import Any

import pytest

from raf import (
    AgentBuilder,
    AgentTool,
    ConfigurationError,
    GuardrailResult,
    GuardrailTripped,
    InMemorySessionStore,
    InputGuardrailTripped,
    OutputGuardrailTripped,
    RafError,
    ToolGuardrail,
    tool,
)
from raf.agent.guardrails import VERDICT_PROMPT, TextGuardrail, parse_verdict
from raf.core.middleware import FunctionInvocationContext
from raf.testing import ScriptedChatClient, call, reply

RAN: list[str] = []


@tool
def read_file(path: str) -> str:
    """Read a file."""
    RAN.append(path)
    return f"contents of {path}: password=hunter2"


@pytest.fixture(autouse=True)
def _clear() -> None:
    RAN.clear()


def no_secrets(text: str) -> GuardrailResult:
    if "password" in text.lower():
        return GuardrailResult.trip("mentions a password")
    return GuardrailResult.passed()


async def no_shouting(text: str) -> GuardrailResult:
    return GuardrailResult.trip("shouting") if text.isupper() else GuardrailResult.passed()


def _judge(*answers: str) -> tuple[Any, ScriptedChatClient]:
    model = ScriptedChatClient(list(answers))
    judge = (
        AgentBuilder("judge")
        .with_instructions("Fail text that shares credentials.")
        .with_chat_client(model)
        .build()
    )
    return judge, model


async def test_a_tripped_input_guardrail_stops_the_run_before_the_model_and_stores_nothing() -> (
    None
):
    store = InMemorySessionStore()
    model = ScriptedChatClient(["Hello!"])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_session_store(store)
        .with_input_guardrail(no_secrets)
        .build()
    )
    session = agent.create_session()
    await agent.run("hi", session=session)
    before = (await store.load(session.id)).to_dict()
    messages_before = list(session.messages)

    with pytest.raises(InputGuardrailTripped) as caught:
        await agent.run("my password is hunter2", session=session)
    assert caught.value.guardrail == "no_secrets"
    assert caught.value.reason == "mentions a password"
    assert isinstance(caught.value, GuardrailTripped)
    assert isinstance(caught.value, RafError)
    assert "input guardrail 'no_secrets' tripped: mentions a password" in str(caught.value)
    assert len(model.requests) == 1  # only the first turn reached the model
    assert session.messages == messages_before
    assert (await store.load(session.id)).to_dict() == before


async def test_an_input_guardrail_agent_judges_the_text_with_the_verdict_protocol() -> None:
    judge, judge_model = _judge("PASS", "FAIL: shares a credential")
    model = ScriptedChatClient(["fine"])
    agent = AgentBuilder().with_chat_client(model).with_input_guardrail(judge).build()
    assert (await agent.run("what is the weather?")).text == "fine"
    with pytest.raises(InputGuardrailTripped) as caught:
        await agent.run("the key is abc")
    assert caught.value.guardrail == "judge"
    assert caught.value.reason == "shares a credential"
    asked = judge_model.requests[1]
    assert asked.messages[-1].text == VERDICT_PROMPT.format(text="the key is abc")
    assert "Fail text that shares credentials." in asked.system
    assert len(model.requests) == 1


async def test_a_tripped_output_guardrail_ends_the_run_with_the_answer_and_stores_nothing() -> None:
    store = InMemorySessionStore()
    model = ScriptedChatClient(["Sure.", "The password is hunter2."])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_session_store(store)
        .with_output_guardrail(no_secrets, name="secrets")
        .build()
    )
    session = agent.create_session()
    await agent.run("hi", session=session)
    before = (await store.load(session.id)).to_dict()
    messages_before = list(session.messages)

    with pytest.raises(OutputGuardrailTripped) as caught:
        await agent.run("what is the password?", session=session)
    assert caught.value.guardrail == "secrets"
    assert caught.value.reason == "mentions a password"
    assert caught.value.response.text == "The password is hunter2."
    assert session.messages == messages_before
    assert (await store.load(session.id)).to_dict() == before


async def test_an_output_guardrail_agent_that_fails_the_answer_trips() -> None:
    judge, judge_model = _judge("FAIL - leaks a key")
    model = ScriptedChatClient(["key=abc"])
    agent = AgentBuilder().with_chat_client(model).with_output_guardrail(judge).build()
    session = agent.create_session()
    with pytest.raises(OutputGuardrailTripped, match="leaks a key"):
        await agent.run("give me the key", session=session)
    assert judge_model.requests[0].messages[-1].text == VERDICT_PROMPT.format(text="key=abc")
    assert session.messages == []


async def test_a_streamed_run_is_checked_once_its_answer_is_complete() -> None:
    model = ScriptedChatClient(["THIS IS LOUD"])
    agent = AgentBuilder().with_chat_client(model).with_output_guardrail(no_shouting).build()
    session = agent.create_session()
    with pytest.raises(OutputGuardrailTripped, match="shouting"):
        async for _ in agent.run_stream("talk", session=session):
            pass
    assert session.messages == []


async def test_guardrails_run_in_order_and_the_first_trip_is_reported() -> None:
    model = ScriptedChatClient(["ok", "ok"])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_input_guardrail(no_shouting)
        .with_input_guardrail(no_secrets)
        .build()
    )
    with pytest.raises(InputGuardrailTripped) as caught:
        await agent.run("MY PASSWORD")
    assert caught.value.guardrail == "no_shouting"
    with pytest.raises(InputGuardrailTripped) as caught:
        await agent.run("my password")
    assert caught.value.guardrail == "no_secrets"
    assert (await agent.run("hello")).text == "ok"


async def test_a_guardrail_that_answers_something_else_is_a_clear_error() -> None:
    def sloppy(text: str) -> Any:
        return True

    agent = (
        AgentBuilder().with_chat_client(ScriptedChatClient(["x"])).with_input_guardrail(sloppy)
    ).build()
    with pytest.raises(RafError, match="guardrail 'sloppy' returned bool; it must return"):
        await agent.run("hi")


def test_verdicts_of_a_guardrail_agent() -> None:
    assert not parse_verdict("PASS").tripped
    assert not parse_verdict("  pass. Looks fine.").tripped
    assert parse_verdict("FAIL: rude") == GuardrailResult.trip("rude")
    assert parse_verdict("Fail").reason == "the guardrail agent failed the text"
    odd = parse_verdict("I think it is fine")
    assert odd.tripped
    assert "neither PASS nor FAIL" in odd.reason
    assert parse_verdict("").tripped


def test_bad_guardrails_are_refused_when_added() -> None:
    with pytest.raises(ConfigurationError, match="a guardrail must be a function"):
        AgentBuilder().with_input_guardrail("not a check")
    with pytest.raises(ConfigurationError, match="needs a `before` check"):
        ToolGuardrail()
    with pytest.raises(ConfigurationError, match="takes a list of tool names"):
        ToolGuardrail(before=lambda c: GuardrailResult.passed(), tools="read_file")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="expected a ToolGuardrail"):
        AgentBuilder().with_tool_guardrail(no_secrets)  # type: ignore[arg-type]
    assert TextGuardrail.of(no_secrets, "renamed").name == "renamed"


# -- tool guardrails --------------------------------------------------------------------


def _file_model() -> ScriptedChatClient:
    return ScriptedChatClient(
        [reply("", call("read_file", path="/etc/shadow", call_id="r1")), "ok"]
    )


async def test_a_tool_guardrail_refuses_a_call_and_the_model_reads_why() -> None:
    def no_system_files(context: FunctionInvocationContext) -> GuardrailResult:
        if str(context.arguments.get("path", "")).startswith("/etc"):
            return GuardrailResult.trip("system files are off limits")
        return GuardrailResult.passed()

    model = _file_model()
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(read_file)
        .with_tool_guardrail(before=no_system_files, tools=["read_file"])
        .build()
    )
    response = await agent.run("read it")
    assert response.text == "ok"
    assert RAN == []
    (result,) = model.requests[1].messages[-1].function_results
    assert result.error == (
        "the call was refused by guardrail 'no_system_files': system files are off limits"
    )


async def test_a_tool_guardrail_redacts_a_result() -> None:
    async def redact(context: FunctionInvocationContext) -> GuardrailResult:
        assert context.result is not None
        text = str(context.result.value)
        if "password=" in text:
            return GuardrailResult.replace(text.split("password=")[0] + "password=[redacted]")
        return GuardrailResult.passed()

    model = _file_model()
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(read_file)
        .with_tool_guardrail(ToolGuardrail(after=redact))
        .build()
    )
    await agent.run("read it")
    assert RAN == ["/etc/shadow"]
    (result,) = model.requests[1].messages[-1].function_results
    assert result.result == "contents of /etc/shadow: password=[redacted]"
    assert result.error is None


async def test_a_tool_guardrail_can_withhold_a_result() -> None:
    def withhold(context: FunctionInvocationContext) -> GuardrailResult:
        return GuardrailResult.trip("too sensitive")

    model = _file_model()
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(read_file)
        .with_tool_guardrail(after=withhold, name="vault")
        .build()
    )
    await agent.run("read it")
    (result,) = model.requests[1].messages[-1].function_results
    assert result.error == "the result was withheld by guardrail 'vault': too sensitive"
    assert "hunter2" not in str(model.requests[1].messages)


async def test_a_tool_guardrail_applies_only_to_the_tools_it_names() -> None:
    def refuse(context: FunctionInvocationContext) -> GuardrailResult:
        return GuardrailResult.trip("no")

    model = _file_model()
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(read_file)
        .with_tool_guardrail(before=refuse, tools=["shell"])
        .build()
    )
    await agent.run("read it")
    assert RAN == ["/etc/shadow"]


async def test_a_sub_agent_does_not_inherit_its_parents_guardrails() -> None:
    child_model = ScriptedChatClient(["the password is in the vault"])
    child = AgentBuilder("helper").with_chat_client(child_model).build()
    parent_model = ScriptedChatClient(
        [reply("", call("helper", task="where is the password?", call_id="h1")), "It is kept."]
    )
    parent = (
        AgentBuilder("parent")
        .with_chat_client(parent_model)
        .with_tool(AgentTool(child))
        .with_input_guardrail(no_secrets)
        .with_output_guardrail(no_secrets)
        .build()
    )
    assert (await parent.run("where is it kept?")).text == "It is kept."
    (result,) = parent_model.requests[1].messages[-1].function_results
    assert result.result == "the password is in the vault"
