"""Output validators: each final answer is checked; `ModelRetry` sends the model back with
its message, as often as `output_retries` allows; tools may raise it too."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from pydantic import BaseModel

from raf import Agent, AgentBuilder, ModelRetry, OutputValidationError, RunContext
from raf.core.contents import FunctionResultContent
from raf.testing import ScriptedChatClient, call, reply


@dataclass
class Deps:
    banned: str


def texts(client: ScriptedChatClient, index: int) -> list[str]:
    return [m.text for m in client.requests[index].messages]


async def test_model_retry_sends_the_model_back_with_the_message() -> None:
    client = ScriptedChatClient(["I am certain it is 42.", "It is probably 42."])
    agent = Agent(chat_client=client)

    @agent.output_validator
    def no_certainty(output: str) -> str:
        if "certain" in output:
            raise ModelRetry("Do not claim certainty.")
        return output

    response = await agent.run("What is it?")
    assert response.text == "It is probably 42."
    assert len(client.requests) == 2
    assert texts(client, 1)[-2:] == [
        "I am certain it is 42.",
        "Do not claim certainty.\n\nFix this and answer again.",
    ]


async def test_retries_are_bounded_and_then_the_run_raises() -> None:
    client = ScriptedChatClient(["no", "no", "no"])
    agent = Agent(chat_client=client, output_retries=1)

    @agent.output_validator
    async def always(output: str) -> None:
        raise ModelRetry("Say yes.")

    with pytest.raises(OutputValidationError, match="not a valid answer after 2") as caught:
        await agent.run("Well?")
    assert caught.value.errors == "Say yes." and len(client.requests) == 2


async def test_a_validator_reads_the_run_s_deps_and_changes_a_typed_value() -> None:
    class Reply(BaseModel):
        word: str

    client = ScriptedChatClient(['{"word": "spam"}', '{"word": "ham"}'])

    def check(ctx: RunContext[Deps], output: Reply) -> Reply:
        if output.word == ctx.deps.banned:
            raise ModelRetry(f"Never say {ctx.deps.banned}.")
        return Reply(word=output.word.upper())

    agent = Agent(chat_client=client, output_type=Reply, output_validators=[check])
    response = await agent.run("A word?", deps=Deps(banned="spam"))
    assert response.value == Reply(word="HAM")
    assert "Never say spam." in texts(client, 1)[-1]


async def test_the_builder_takes_validators_too() -> None:
    client = ScriptedChatClient(["x", "y"])
    seen: list[str] = []
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_output_validator(lambda output: seen.append(output))
        .build()
    )
    await agent.run("Hi")
    assert seen == ["x"]


def test_a_validator_of_the_wrong_shape_is_refused_when_added() -> None:
    agent = Agent(chat_client=ScriptedChatClient(["x"]))
    with pytest.raises(Exception, match="takes 3 arguments"):
        agent.output_validator(lambda a, b, c: None)


async def test_a_tool_raising_model_retry_gives_the_model_its_message() -> None:
    def lookup(name: str) -> str:
        """Look a customer up."""
        raise ModelRetry(f"No customer {name!r}; ask for the full name.")

    client = ScriptedChatClient([reply("", call("lookup", name="Bo")), "Which Bo?"])
    response = await Agent(chat_client=client, tools=[lookup]).run("Find Bo")
    results = [c for m in response.messages for c in m.contents]
    errors = [c.error for c in results if isinstance(c, FunctionResultContent)]
    assert errors == ["No customer 'Bo'; ask for the full name."]


async def test_a_streamed_run_is_checked_the_same_way() -> None:
    client = ScriptedChatClient(["bad", "good"])
    agent = Agent(chat_client=client)

    @agent.output_validator
    def good(output: str) -> str:
        if output != "good":
            raise ModelRetry("Say good.")
        return output

    text = "".join([u.text async for u in agent.run_stream("Hi")])
    assert text.endswith("good") and len(client.requests) == 2
