"""Instructions written at each run from its context (the pydantic-ai habit of
`@agent.instructions`): `instructions=` takes functions, `@agent.dynamic_instructions`
adds one."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from raf import Agent, AgentBuilder, ConfigurationError, RunContext
from raf.testing import ScriptedChatClient


@dataclass
class Deps:
    customer: str


def system(client: ScriptedChatClient, index: int = 0) -> str:
    return client.requests[index].messages[0].text


async def test_a_decorated_function_writes_instructions_from_the_run_s_deps() -> None:
    client = ScriptedChatClient(["a", "b"])
    agent = Agent(chat_client=client, instructions="You are a bank's support agent.")

    @agent.dynamic_instructions
    async def customer_name(ctx: RunContext[Deps]) -> str:
        return f"The customer's name is {ctx.deps.customer!r}."

    await agent.run("Hi", deps=Deps(customer="Ada"))
    await agent.run("Hi", deps=Deps(customer="Bo"))
    assert system(client, 0) == "You are a bank's support agent.\nThe customer's name is 'Ada'."
    assert system(client, 1).endswith("The customer's name is 'Bo'.")


async def test_instructions_may_be_a_list_of_text_and_functions() -> None:
    client = ScriptedChatClient(["a"])
    agent = Agent(
        chat_client=client,
        instructions=["Be brief.", lambda: "Today is Monday.", lambda ctx: None],
    )
    await agent.run("Hi")
    assert system(client) == "Be brief.\nToday is Monday."
    assert agent.instructions == "Be brief."


async def test_the_builder_takes_an_instructions_function() -> None:
    client = ScriptedChatClient(["a"])
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_instructions("Fixed.")
        .with_instructions(lambda ctx: f"deps={ctx.deps}")
        .build()
    )
    await agent.run("Hi", deps=7)
    assert system(client) == "Fixed.\ndeps=7"


def test_a_function_of_the_wrong_shape_is_refused_when_given() -> None:
    with pytest.raises(ConfigurationError, match="takes 2 arguments"):
        Agent(chat_client=ScriptedChatClient(["a"]), instructions=lambda a, b: "x")
    with pytest.raises(ConfigurationError, match="takes 2 arguments"):
        AgentBuilder().with_instructions(lambda a, b: "x")


async def test_a_function_that_returns_no_text_is_an_error_naming_it() -> None:
    def count(ctx: RunContext[None]) -> str:
        return 3  # type: ignore[return-value]

    agent = Agent(chat_client=ScriptedChatClient(["a"]), instructions=count)
    with pytest.raises(ConfigurationError, match="'count' returned int"):
        await agent.run("Hi")
