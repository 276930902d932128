"""Instructions templates: mustache rendered at each run, variables checked first."""

from __future__ import annotations

import pytest

from raf import AgentBuilder, AgentRunOptions
from raf.agent.template import PromptTemplate
from raf.core.errors import ConfigurationError
from raf.testing import ScriptedChatClient

SCHEMA = {
    "type": "object",
    "properties": {"customer": {"type": "string"}, "tier": {"type": "integer", "minimum": 1}},
    "required": ["customer"],
}


def agent_with(template: str, **kwargs: object) -> tuple[object, ScriptedChatClient]:
    client = ScriptedChatClient(["ok"] * 4)
    builder = AgentBuilder().with_chat_client(client)
    agent = builder.with_instructions_template(template, **kwargs).build()  # type: ignore[arg-type]
    return agent, client


async def test_variables_fill_the_template_at_each_run() -> None:
    client = ScriptedChatClient(["ok", "ok"])
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_instructions_template(
            "Help {{customer}} (tier {{tier}}).{{#vip}} Be quick.{{/vip}} <{{note}}>",
            input_schema=SCHEMA,
            variables={"tier": 1, "note": "a & b"},
        )
        .with_instructions("Answer in English.")
        .build()
    )
    await agent.run("hi", variables={"customer": "Ada", "vip": True})
    await agent.run("hi", options=AgentRunOptions(template_variables={"customer": "Bob"}))
    assert client.requests[0].system == "Help Ada (tier 1). Be quick. <a & b>\nAnswer in English."
    assert client.requests[1].system == "Help Bob (tier 1). <a & b>\nAnswer in English."


def test_run_sync_takes_variables() -> None:
    agent, client = agent_with("Hi {{name}}")
    agent.run_sync("x", variables={"name": "Zoe"})  # type: ignore[attr-defined]
    assert client.requests[0].system == "Hi Zoe"


async def test_a_missing_variable_is_a_clear_error_before_the_model_runs() -> None:
    agent, client = agent_with("Help {{customer}}.", input_schema=SCHEMA)
    with pytest.raises(ConfigurationError) as caught:
        await agent.run("hi")  # type: ignore[attr-defined]
    message = str(caught.value)
    assert caught.value.key_path == "variables.customer"
    assert "uses {{customer}} but no value was given" in message
    assert "variables=" in message
    assert client.requests == []


async def test_a_variable_of_the_wrong_type_is_a_located_error() -> None:
    agent, client = agent_with("Help {{customer}} ({{tier}}).", input_schema=SCHEMA)
    with pytest.raises(ConfigurationError) as caught:
        await agent.run("hi", variables={"customer": "Ada", "tier": "gold"})  # type: ignore[attr-defined]
    assert caught.value.key_path == "variables.tier"
    assert "'gold' is not of type 'integer'" in str(caught.value)
    with pytest.raises(ConfigurationError, match="less than the minimum of 1"):
        await agent.run("hi", variables={"customer": "Ada", "tier": 0})  # type: ignore[attr-defined]
    assert client.requests == []


async def test_a_name_missing_inside_a_section_is_named() -> None:
    agent, _ = agent_with("{{#user}}Hello {{first}}{{/user}}")
    with pytest.raises(ConfigurationError, match="no value for 'first'"):
        await agent.run("hi", variables={"user": {"last": "L"}})  # type: ignore[attr-defined]


async def test_variables_for_an_agent_without_a_template_are_refused() -> None:
    client = ScriptedChatClient(["ok"])
    agent = AgentBuilder().with_chat_client(client).with_instructions("Hi {{x}}").build()
    with pytest.raises(ConfigurationError, match=r"no instructions template.*\(x\)"):
        await agent.run("hi", variables={"x": 1})
    # plain instructions are never rendered
    await agent.run("hi")
    assert client.requests[0].system == "Hi {{x}}"


def test_bad_templates_are_refused_when_built() -> None:
    with pytest.raises(ConfigurationError, match="not valid mustache"):
        PromptTemplate(text="{{#a}}x{{/b}}")
    with pytest.raises(ConfigurationError, match="no partials"):
        PromptTemplate(text="{{>secrets}}")
    with pytest.raises(ConfigurationError, match="input schema is not a valid JSON Schema"):
        PromptTemplate(text="x", input_schema={"type": "nope"})


async def test_a_partial_inside_a_section_reads_no_file() -> None:
    agent, _ = agent_with("{{#a}}{{>agent}}{{/a}}")
    with pytest.raises(ConfigurationError, match="no partials"):
        await agent.run("hi", variables={"a": True})  # type: ignore[attr-defined]


def test_defaults_that_break_the_schema_are_reported() -> None:
    template = PromptTemplate(text="{{tier}}", input_schema=SCHEMA, defaults={"tier": "x"})
    assert template.default_problems() == [
        ("tier", "does not match inputSchema: 'x' is not of type 'integer'")
    ]
