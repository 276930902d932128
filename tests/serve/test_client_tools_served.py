"""Tools an OpenAI client sends, offered to the agent beside its own and handed back
when the model calls them, with the `openai` SDK, pydantic-ai's default structured
output, LangChain's `function_calling` structured output and the `openai-agents` SDK as
clients of a real server on loopback; and one text per answer on every OpenAI surface."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, cast

import openai
import pytest
from pydantic import BaseModel, SecretStr

from raf.agent.builder import AgentBuilder
from raf.core.function_tool import tool
from raf.core.messages import ChatMessage
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.testing import ScriptedChatClient, call, reply

LOOKUP: Any = {
    "type": "function",
    "function": {
        "name": "lookup",
        "description": "Look a word up in the client's own dictionary.",
        "parameters": {"type": "object", "properties": {"word": {"type": "string"}}},
    },
}
FLAT_LOOKUP: Any = {"type": "function", **LOOKUP["function"]}  # the Responses API's spelling


class City(BaseModel):
    name: str
    people: int


@dataclass
class Weather:
    url: str
    model: ScriptedChatClient
    ran: list[str]

    def sdk(self) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{self.url}/v1", api_key="none", max_retries=0, timeout=30)


@pytest.fixture(scope="module")
def weather() -> Iterator[Weather]:
    ran: list[str] = []

    @tool(name="weather", description="The weather in a city.")
    def forecast(city: str) -> str:
        ran.append(city)
        return f"sunny in {city}"

    model = ScriptedChatClient([])
    agent = (
        AgentBuilder()
        .with_name("weatherman")
        .with_instructions("You tell the weather.")
        .with_chat_client(model)
        .with_tool(forecast)
        .build()
    )
    with serve_in_thread(create_app(AgentHost([agent]), a2a=False)) as url:
        yield Weather(url, model, ran)


def both_calls() -> ChatMessage:
    return reply(
        "Let me check.",
        call("weather", call_id="own1", city="Paris"),
        call("lookup", call_id="client1", word="sunny"),
    )


def test_chat_hands_the_clients_call_back_and_goes_on_with_its_result(weather: Weather) -> None:
    weather.model.add(both_calls(), "Sunny in Paris means bright.")
    weather.ran.clear()
    asked: list[Any] = [{"role": "user", "content": "Weather in Paris, and what is sunny?"}]
    first = weather.sdk().chat.completions.create(
        model="weatherman",
        messages=asked,
        tools=[LOOKUP],
    )
    choice = first.choices[0]
    assert choice.finish_reason == "tool_calls" and weather.ran == ["Paris"]
    calls: list[Any] = list(choice.message.tool_calls or [])
    assert [(c.id, c.function.name, json.loads(c.function.arguments)) for c in calls] == [
        ("client1", "lookup", {"word": "sunny"})
    ]
    offered = [t.name for t in weather.model.requests[-1].options.tools]
    assert offered == ["weather", "lookup"]
    went_on = weather.sdk().chat.completions.create(
        model="weatherman",
        messages=[
            *asked,
            cast(Any, choice.message.model_dump(exclude_none=True)),
            {"role": "tool", "tool_call_id": "client1", "content": "bright"},
        ],
        tools=[LOOKUP],
    )
    assert went_on.choices[0].message.content == "Sunny in Paris means bright."
    sent = weather.model.requests[-1].messages
    assert [m.role.value for m in sent] == ["system", "user", "assistant", "tool"]


def test_a_streamed_chat_hands_the_call_back_as_tool_call_deltas(weather: Weather) -> None:
    weather.model.add(both_calls())
    chunks = list(
        weather.sdk().chat.completions.create(
            model="weatherman",
            messages=[{"role": "user", "content": "Weather?"}],
            tools=[LOOKUP],
            stream=True,
        )
    )
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    called: list[Any] = [t for d in deltas for t in d.tool_calls or []]
    assert [(t.id, t.function.name) for t in called] == [("client1", "lookup")]
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "tool_calls"
    assert "".join(d.content or "" for d in deltas) == "Let me check."


def test_responses_hand_back_a_function_call_and_go_on_from_its_output(weather: Weather) -> None:
    weather.model.add(both_calls(), "Bright, and sunny in Paris.")
    sdk = weather.sdk()
    first = sdk.responses.create(
        model="weatherman",
        input="Weather?",
        tools=[FLAT_LOOKUP],
    )
    handed = [o for o in first.output if o.type == "function_call"]
    assert [(o.call_id, o.name, o.arguments) for o in handed] == [
        ("client1", "lookup", '{"word": "sunny"}')
    ]
    went_on = sdk.responses.create(
        model="weatherman",
        previous_response_id=first.id,
        input=[{"type": "function_call_output", "call_id": "client1", "output": "bright"}],
        tools=[FLAT_LOOKUP],
    )
    assert went_on.output_text == "Bright, and sunny in Paris."
    # the session keeps the agent's own call and result, then the client's, in order
    sent = weather.model.requests[-1].messages
    traffic = [
        (m.role.value, getattr(c, "call_id", None))
        for m in sent
        for c in m.contents
        if getattr(c, "call_id", None)
    ]
    assert traffic == [
        ("assistant", "own1"),
        ("assistant", "client1"),
        ("tool", "own1"),
        ("tool", "client1"),
    ]


def test_a_streamed_response_hands_back_the_function_call(weather: Weather) -> None:
    weather.model.add(both_calls())
    with weather.sdk().responses.stream(
        model="weatherman",
        input="Weather?",
        tools=[FLAT_LOOKUP],
    ) as stream:
        kinds = [e.type for e in stream]
        final = stream.get_final_response()
    assert "response.function_call_arguments.done" in kinds
    assert [o.type for o in final.output] == ["message", "function_call"]


def test_the_text_of_several_model_calls_is_one_and_the_same_on_every_surface(
    weather: Weather,
) -> None:
    def script() -> None:
        weather.model.add(
            reply("Let me check.", call("weather", city="Paris")), "The weather: sunny in Paris"
        )

    sdk = weather.sdk()
    ask: list[Any] = [{"role": "user", "content": "Weather in Paris?"}]
    texts: dict[str, str] = {}
    script()
    texts["chat"] = (
        sdk.chat.completions.create(model="weatherman", messages=ask).choices[0].message.content
        or ""
    )
    script()
    chunks = sdk.chat.completions.create(model="weatherman", messages=ask, stream=True)
    texts["chat streamed"] = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    script()
    texts["responses"] = sdk.responses.create(
        model="weatherman", input="Weather in Paris?"
    ).output_text
    script()
    with sdk.responses.stream(model="weatherman", input="Weather in Paris?") as stream:
        streamed = "".join(e.delta for e in stream if e.type == "response.output_text.delta")
        texts["responses streamed"] = stream.get_final_response().output_text
    assert streamed == texts["responses streamed"]
    assert set(texts.values()) == {"Let me check.\n\nThe weather: sunny in Paris"}, texts


def test_pydantic_ai_default_structured_output_works_unchanged(weather: Weather) -> None:
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    weather.model.add(reply("", call("final_result", name="Paris", people=2_100_000)))
    model = OpenAIChatModel(
        "weatherman", provider=OpenAIProvider(base_url=f"{weather.url}/v1", api_key="none")
    )
    result = Agent(model, output_type=City).run_sync("The biggest city of France?")
    assert result.output == City(name="Paris", people=2_100_000)
    offered = [t.name for t in weather.model.requests[-1].options.tools]
    assert offered == ["weather", "final_result"]


def test_langchain_function_calling_structured_output_works_unchanged(weather: Weather) -> None:
    from langchain_openai import ChatOpenAI

    weather.model.add(reply("", call("City", name="Lyon", people=520_000)))
    chat = ChatOpenAI(model="weatherman", base_url=f"{weather.url}/v1", api_key=SecretStr("none"))
    found = chat.with_structured_output(City, method="function_calling").invoke("Lyon?")
    assert found == City(name="Lyon", people=520_000)
    assert weather.model.requests[-1].options.tool_choice == "City"


def test_openai_agents_function_tools_run_on_the_client(weather: Weather) -> None:
    from agents import Agent, OpenAIResponsesModel, Runner, function_tool, set_tracing_disabled

    set_tracing_disabled(True)
    looked_up: list[str] = []

    @function_tool
    def lookup(word: str) -> str:
        """Look a word up in the client's own dictionary."""
        looked_up.append(word)
        return "bright"

    weather.model.add(both_calls(), "Sunny in Paris: bright.")
    sdk = openai.AsyncOpenAI(base_url=f"{weather.url}/v1", api_key="none", max_retries=0)
    agent = Agent(
        name="client",
        tools=[lookup],
        model=OpenAIResponsesModel(model="weatherman", openai_client=sdk),
    )

    async def both() -> tuple[Any, Any]:
        result = await Runner.run(agent, "Weather in Paris, and what is sunny?")
        # an answer of several model calls inside raf reads as on the other surfaces
        weather.model.add(
            reply("Let me check.", call("weather", city="Paris")), "The weather: sunny in Paris"
        )
        return result, await Runner.run(agent, "Weather in Paris?")

    result, again = asyncio.run(both())
    assert looked_up == ["sunny"]
    # "Let me check." was the first response's text; the answer is the second's
    assert result.final_output == "Sunny in Paris: bright."
    assert again.final_output == "Let me check.\n\nThe weather: sunny in Paris"
