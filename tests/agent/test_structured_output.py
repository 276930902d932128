"""Typed structured output on the scripted model: types, validation, retries, streaming."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Literal

import pytest
from pydantic import BaseModel
from typing_extensions import TypedDict  # pydantic needs this one before Python 3.12

from raf import AgentBuilder, AgentRunContext, AgentRunOptions
from raf.core.errors import ConfigurationError, OutputValidationError
from raf.core.messages import Role
from raf.core.responses import AgentResponseUpdate, UpdateKind
from raf.testing import ScriptedChatClient, call, reply


class Weather(BaseModel):
    """The weather in a city."""

    city: str
    celsius: int
    sky: Literal["sun", "rain"] = "sun"


@dataclass
class Point:
    x: float
    y: float


class Person(TypedDict):
    name: str
    age: int


def agent_for(*answers: Any, output_type: Any = None, **kwargs: Any) -> Any:
    client = ScriptedChatClient(list(answers))
    builder = AgentBuilder().with_chat_client(client)
    if output_type is not None:
        builder.with_output_type(output_type, **kwargs)
    return builder.build(), client


@pytest.mark.parametrize(
    ("output_type", "answer", "expected"),
    [
        (Weather, '{"city": "Oslo", "celsius": 3}', Weather(city="Oslo", celsius=3)),
        (Point, '{"x": 1, "y": 2.5}', Point(x=1.0, y=2.5)),
        (Person, '{"name": "Ada", "age": 36}', {"name": "Ada", "age": 36}),
        (list[Point], '{"result": [{"x": 0, "y": 1}]}', [Point(x=0.0, y=1.0)]),
        (Point | Weather, '{"result": {"city": "Rome", "celsius": 20}}', None),
        (int, '{"result": 42}', 42),
        (bool, '{"result": true}', True),
    ],
)
async def test_each_kind_of_type_comes_back_typed(
    output_type: Any, answer: str, expected: Any
) -> None:
    agent, client = agent_for(answer, output_type=output_type)
    response = await agent.run("go")
    if expected is None:
        expected = Weather(city="Rome", celsius=20)
    assert response.value == expected
    assert type(response.value) is type(expected)
    schema = client.requests[0].options.output_schema
    assert schema is not None and schema.json_schema["type"] == "object"


async def test_the_schema_asked_for_names_the_type_and_wraps_what_is_not_an_object() -> None:
    agent, client = agent_for('{"result": [1, 2]}', output_type=list[int])
    assert (await agent.run("go")).value == [1, 2]
    schema = client.requests[0].options.output_schema
    assert schema is not None
    assert schema.json_schema["properties"]["result"] == {
        "items": {"type": "integer"},
        "type": "array",
    }
    agent, client = agent_for('{"city": "Oslo", "celsius": 3}', output_type=Weather)
    await agent.run("go")
    schema = client.requests[0].options.output_schema
    assert schema is not None and schema.name == "Weather"
    assert schema.description == "The weather in a city."


async def test_without_an_output_type_nothing_changes() -> None:
    agent, client = agent_for("plain text")
    response = await agent.run("go")
    assert response.text == "plain text" and response.value is None
    assert client.requests[0].options.output_schema is None


async def test_a_failed_answer_goes_back_with_the_errors_and_the_retry_is_kept() -> None:
    agent, client = agent_for(
        '{"city": "Oslo", "celsius": "cold"}',
        '{"city": "Oslo", "celsius": 2}',
        output_type=Weather,
    )
    session = agent.create_session()
    response = await agent.run("weather?", session=session)
    assert response.value == Weather(city="Oslo", celsius=2)
    feedback = client.requests[1].messages[-1]
    assert feedback.role is Role.USER
    assert "celsius" in feedback.text and "valid integer" in feedback.text
    assert client.requests[1].messages[-2].text == '{"city": "Oslo", "celsius": "cold"}'
    # the session holds every attempt, so the next turn sees what happened
    texts = [m.text for m in session.messages]
    assert texts[-1] == '{"city": "Oslo", "celsius": 2}'
    assert any("valid integer" in t for t in texts)


async def test_never_right_ends_with_the_raw_text_and_stores_nothing() -> None:
    agent, client = agent_for("not json", '{"city": 1}', output_type=Weather)
    session = agent.create_session()
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("weather?", session=session)
    error = caught.value
    assert error.raw_text == '{"city": 1}'
    assert error.attempts == 2 and len(client.requests) == 2
    assert "celsius: Field required" in error.errors
    assert "Traceback" not in str(error) and '{"city": 1}' in str(error)
    assert error.response is not None and len(error.response.messages) == 3
    assert session.messages == []


async def test_retries_are_counted_per_agent_and_per_run() -> None:
    agent, client = agent_for("a", "b", "c", output_type=int, retries=2)
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("go")
    assert caught.value.attempts == 3 and client.remaining == 0

    agent, client = agent_for("a", "b", output_type=int)
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("go", options=AgentRunOptions(output_retries=0))
    assert caught.value.attempts == 1 and client.remaining == 1


async def test_a_null_for_an_optional_field_takes_its_default() -> None:
    agent, _ = agent_for('{"city": "Oslo", "celsius": 3, "sky": null}', output_type=Weather)
    assert (await agent.run("go")).value == Weather(city="Oslo", celsius=3, sky="sun")


async def test_a_fenced_answer_is_read() -> None:
    agent, _ = agent_for('```json\n{"x": 1, "y": 2}\n```', output_type=Point)
    assert (await agent.run("go")).value == Point(x=1, y=2)


def test_the_run_type_replaces_the_agents_and_run_sync_takes_it() -> None:
    agent, _ = agent_for('{"result": 7}', output_type=Weather)
    assert agent.run_sync("go", output_type=int).value == 7
    agent, _ = agent_for('{"x": 1, "y": 2}')
    response = agent.run_sync("go", options=AgentRunOptions(output_type=Point))
    assert response.value == Point(x=1, y=2)


async def test_tools_run_before_the_typed_answer() -> None:
    def temperature(city: str) -> int:
        """The temperature of a city."""
        return 4

    client = ScriptedChatClient(
        [reply("", call("temperature", city="Oslo")), '{"city": "Oslo", "celsius": 4}']
    )
    agent = AgentBuilder().with_chat_client(client).with_tool(temperature)
    built = agent.with_output_type(Weather).build()
    response = await built.run("weather?")
    assert response.value == Weather(city="Oslo", celsius=4)
    assert client.requests[1].options.output_schema is not None


async def test_streaming_yields_partial_values_then_the_typed_value() -> None:
    answer = json.dumps({"city": "Oslo", "celsius": 3})
    client = ScriptedChatClient([answer], chunk_size=6)
    agent = AgentBuilder().with_chat_client(client).with_output_type(Weather).build()
    updates = [u async for u in agent.run_stream("go")]
    partials = [u.partial_value for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert {"city": "Os"} in partials
    assert {"city": "Oslo"} in partials
    assert partials[-1] == {"city": "Oslo", "celsius": 3}
    finished = updates[-1]
    assert finished.kind is UpdateKind.FINISHED
    assert finished.value == Weather(city="Oslo", celsius=3)
    assert finished.to_dict()["value"] == {"city": "Oslo", "celsius": 3, "sky": "sun"}


async def test_streaming_retries_and_partials_start_over() -> None:
    client = ScriptedChatClient(['{"result": "x"}', '{"result": 5}'], chunk_size=4)
    agent = AgentBuilder().with_chat_client(client).build()
    updates = [u async for u in agent.run_stream("go", output_type=int)]
    partials = [u.partial_value for u in updates if u.partial_value is not None]
    assert "x" in partials and partials[-1] == 5
    assert partials.index("x") < partials.index(5)
    assert [u.kind for u in updates].count(UpdateKind.FINISHED) == 1
    assert updates[-1].value == 5


async def test_streaming_that_never_validates_raises() -> None:
    client = ScriptedChatClient(["no", "no"])
    agent = AgentBuilder().with_chat_client(client).with_output_type(int).build()
    with pytest.raises(OutputValidationError):
        async for _ in agent.run_stream("go"):
            pass


async def test_a_json_schema_output_type_gives_a_checked_dict() -> None:
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "tags": {"type": "array"}},
        "required": ["name"],
    }
    agent, client = agent_for('{"tags": []}', '{"name": "x", "tags": ["a"]}', output_type=schema)
    response = await agent.run("go")
    assert response.value == {"name": "x", "tags": ["a"]}
    assert "'name' is a required property" in client.requests[1].messages[-1].text
    assert agent.output_schema == schema


def test_a_type_with_no_schema_is_refused_at_build() -> None:
    client = ScriptedChatClient([])
    with pytest.raises(ConfigurationError) as caught:
        AgentBuilder().with_chat_client(client).with_output_type(object()).build()
    assert "cannot be an output type" in str(caught.value)
    assert "output_type" in str(caught.value)
    with pytest.raises(ConfigurationError, match="not a valid JSON Schema"):
        AgentBuilder().with_chat_client(client).with_output_type({"type": 5}).build()


@pytest.mark.parametrize("retries", [-1, True, "1"])
def test_bad_retries_are_refused(retries: Any) -> None:
    with pytest.raises(ConfigurationError, match="retries"):
        AgentBuilder().with_output_type(int, retries=retries)


async def test_bad_run_retries_are_refused() -> None:
    agent, _ = agent_for("x", output_type=int)
    with pytest.raises(ConfigurationError, match="output_retries"):
        await agent.run("go", options=AgentRunOptions(output_retries=-1))


async def test_streaming_through_middleware_and_tools_ends_once_with_the_value() -> None:
    def temperature(city: str) -> int:
        """The temperature of a city."""
        return 4

    seen: list[str] = []

    async def audit(context: AgentRunContext, call_next: Any) -> None:
        await call_next()
        assert context.result is not None
        seen.append(type(context.result.value).__name__)

    client = ScriptedChatClient(
        [reply("", call("temperature", city="Oslo")), '{"city": "Oslo", "celsius": 4}'],
        chunk_size=5,
    )
    agent = (
        AgentBuilder()
        .with_chat_client(client)
        .with_tool(temperature)
        .use_middleware(audit)
        .with_output_type(Weather)
        .build()
    )
    session = agent.create_session()
    updates = [u async for u in agent.run_stream("weather?", session=session)]
    assert [u.kind for u in updates].count(UpdateKind.FINISHED) == 1
    assert updates[-1].value == Weather(city="Oslo", celsius=4)
    assert seen == ["Weather"]
    partial = next(u for u in updates if u.partial_value)
    assert AgentResponseUpdate.from_dict(partial.to_dict()).partial_value == partial.partial_value
    assert session.messages[-1].text == '{"city": "Oslo", "celsius": 4}'
