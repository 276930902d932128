"""Structured output over the wire: OpenAI's strict json_schema and Anthropic's forced
output tool, against a loopback server that answers from a script."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from raf.agent.builder import AgentBuilder
from raf.clients.anthropic.client import AnthropicChatClient
from raf.clients.openai.client import OpenAIChatClient
from raf.clients.retry import RetryingChatClient
from raf.core.errors import ConfigurationError, OutputValidationError
from raf.core.function_tool import tool
from raf.core.responses import FinishReason, UpdateKind
from tests.clients.faultserver import FaultServer, Reply, chunk, completion

OPEN: list[Any] = []


class Day(BaseModel):
    weekday: str
    celsius: float


class Forecast(BaseModel):
    """A forecast for a city."""

    city: str
    days: list[Day]
    sky: Literal["sun", "rain"] = "sun"
    note: str | None = None


class Loose(BaseModel):
    city: str
    readings: dict[str, float]


FORECAST = {"city": "Oslo", "days": [{"weekday": "Mon", "celsius": 3.5}], "sky": None}


@pytest.fixture(autouse=True)
async def _close_clients() -> AsyncIterator[None]:
    yield
    while OPEN:
        await OPEN.pop().aclose()


def openai(fault: FaultServer) -> OpenAIChatClient:
    client = OpenAIChatClient("m", base_url=f"{fault.url}/v1", api_key="sk-test-0123456789")
    OPEN.append(client)
    return client


def anthropic(fault: FaultServer) -> AnthropicChatClient:
    client = AnthropicChatClient("claude-x", base_url=fault.url, api_key="sk-ant-0123456789")
    OPEN.append(client)
    return client


# -- OpenAI: response_format json_schema, strict ---------------------------------------


async def test_openai_asks_with_a_strict_schema_and_the_value_is_typed(
    fault: FaultServer,
) -> None:
    fault.reply(Reply(json_body=completion(json.dumps(FORECAST))))
    agent = AgentBuilder().with_chat_client(openai(fault)).with_output_type(Forecast).build()
    response = await agent.run("forecast for Oslo")
    assert response.value == Forecast(city="Oslo", days=[Day(weekday="Mon", celsius=3.5)])
    sent = fault.seen[-1].body["response_format"]
    assert sent["type"] == "json_schema"
    spec = sent["json_schema"]
    assert spec["name"] == "Forecast" and spec["strict"] is True
    assert spec["description"] == "A forecast for a city."
    schema = spec["schema"]
    assert schema["additionalProperties"] is False
    assert schema["required"] == ["city", "days", "sky", "note"]
    assert schema["properties"]["sky"]["anyOf"][1] == {"type": "null"}
    assert schema["properties"]["note"]["anyOf"] == [{"type": "string"}, {"type": "null"}]
    assert "default" not in json.dumps(schema)
    day = schema["$defs"]["Day"]
    assert day["additionalProperties"] is False and day["required"] == ["weekday", "celsius"]


async def test_openai_streams_partial_values(fault: FaultServer) -> None:
    text = json.dumps({"city": "Oslo", "days": [{"weekday": "Mon", "celsius": 3}]})
    pieces = [text[i : i + 7] for i in range(0, len(text), 7)]
    events: list[Any] = [chunk({"content": p}) for p in pieces]
    events += [chunk({}, finish="stop"), "[DONE]"]
    fault.reply(Reply(events=events))
    agent = AgentBuilder().with_chat_client(openai(fault)).build()
    updates = [u async for u in agent.run_stream("go", output_type=Forecast)]
    partials = [u.partial_value for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert {"city": "Oslo", "days": [{"weekday": "Mon"}]} in partials
    assert partials[-1] == {"city": "Oslo", "days": [{"weekday": "Mon", "celsius": 3}]}
    assert updates[-1].value == Forecast(city="Oslo", days=[Day(weekday="Mon", celsius=3)])
    assert fault.seen[-1].body["stream"] is True
    assert fault.seen[-1].body["response_format"]["json_schema"]["strict"] is True


async def test_openai_retry_sends_the_errors_back(fault: FaultServer) -> None:
    fault.reply(
        Reply(json_body=completion('{"city": "Oslo", "days": "none"}')),
        Reply(json_body=completion(json.dumps(FORECAST))),
    )
    agent = AgentBuilder().with_chat_client(openai(fault)).with_output_type(Forecast).build()
    response = await agent.run("go")
    assert response.value is not None and response.value.city == "Oslo"
    messages = fault.seen[-1].body["messages"]
    assert messages[-2] == {"role": "assistant", "content": '{"city": "Oslo", "days": "none"}'}
    assert (
        messages[-1]["role"] == "user"
        and "days: Input should be a valid list" in (messages[-1]["content"])
    )


async def test_openai_never_valid_is_an_error_with_the_raw_text(fault: FaultServer) -> None:
    fault.reply(Reply(json_body=completion("I cannot do JSON")))
    agent = AgentBuilder().with_chat_client(openai(fault)).with_output_type(Forecast).build()
    with pytest.raises(OutputValidationError) as caught:
        await agent.run("go")
    assert caught.value.raw_text == "I cannot do JSON" and len(fault.seen) == 2


def test_openai_refuses_at_build_a_schema_strict_mode_cannot_express(
    fault: FaultServer,
) -> None:
    client = RetryingChatClient(openai(fault))  # found through the decorator
    with pytest.raises(ConfigurationError) as caught:
        AgentBuilder().with_chat_client(client).with_output_type(Loose).build()
    message = str(caught.value)
    assert "'Loose.readings'" in message and "free keys" in message
    assert "output_type" in message
    assert fault.seen == []


async def test_openai_refuses_a_run_type_before_any_request(fault: FaultServer) -> None:
    agent = AgentBuilder().with_chat_client(openai(fault)).build()
    with pytest.raises(ConfigurationError, match=r"'Any\.result' accepts a value of any type"):
        await agent.run("go", output_type=Any)
    assert fault.seen == []


# -- Anthropic: a forced output tool -------------------------------------------------


def tool_use_message(name: str, value: Any, call_id: str = "toolu_1") -> dict[str, Any]:
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-x",
        "content": [{"type": "tool_use", "id": call_id, "name": name, "input": value}],
        "stop_reason": "tool_use",
        "usage": {"input_tokens": 10, "output_tokens": 5},
    }


async def test_anthropic_forces_the_output_tool_and_its_input_is_the_value(
    fault: FaultServer,
) -> None:
    fault.reply(Reply(json_body=tool_use_message("Forecast", FORECAST)))
    agent = AgentBuilder().with_chat_client(anthropic(fault)).with_output_type(Forecast).build()
    response = await agent.run("forecast")
    assert response.value == Forecast(city="Oslo", days=[Day(weekday="Mon", celsius=3.5)])
    assert response.finish_reason is FinishReason.STOP
    body = fault.seen[-1].body
    assert body["tool_choice"] == {"type": "tool", "name": "Forecast"}
    [output_tool] = body["tools"]
    assert output_tool["name"] == "Forecast"
    assert output_tool["description"] == "A forecast for a city."
    assert output_tool["input_schema"]["properties"]["days"]["items"] == {"$ref": "#/$defs/Day"}
    # the answer is kept as text: the next turn sends it back as an assistant message
    assert response.messages[-1].function_calls == []


@tool
def weekday_of(date: str) -> str:
    """The weekday of a date.

    Args:
        date: an ISO date
    """
    return "Mon"


async def test_anthropic_with_tools_lets_the_model_call_them_first(fault: FaultServer) -> None:
    fault.reply(
        Reply(json_body=tool_use_message("weekday_of", {"date": "2025-01-06"}, "toolu_0")),
        Reply(json_body=tool_use_message("Forecast", FORECAST)),
    )
    client = anthropic(fault)
    agent = AgentBuilder().with_chat_client(client).with_tool(weekday_of).build()
    response = await agent.run("go", output_type=Forecast)
    assert response.value is not None and response.value.days[0].weekday == "Mon"
    first = fault.seen[0].body
    assert first["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in first["tools"]] == ["weekday_of", "Forecast"]
    results = [r for m in response.messages for r in m.function_results]
    assert [r.result for r in results] == ["Mon"]


def anthropic_stream(name: str, pieces: list[str]) -> list[Any]:
    events: list[Any] = [
        (
            "message_start",
            {
                "type": "message_start",
                "message": {
                    "id": "msg_1",
                    "type": "message",
                    "role": "assistant",
                    "content": [],
                    "model": "claude-x",
                    "stop_reason": None,
                    "usage": {"input_tokens": 10, "output_tokens": 1},
                },
            },
        ),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "tool_use", "id": "toolu_1", "name": name, "input": {}},
            },
        ),
    ]
    for piece in pieces:
        events.append(
            (
                "content_block_delta",
                {
                    "type": "content_block_delta",
                    "index": 0,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                },
            )
        )
    events += [
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]
    return events


async def test_anthropic_streams_the_output_tools_input_as_partial_values(
    fault: FaultServer,
) -> None:
    text = json.dumps({"city": "Bergen", "days": [{"weekday": "Tue", "celsius": 8}]})
    fault.reply(Reply(events=anthropic_stream("Forecast", [text[:12], text[12:30], text[30:]])))
    agent = AgentBuilder().with_chat_client(anthropic(fault)).with_output_type(Forecast).build()
    updates = [u async for u in agent.run_stream("go")]
    deltas = [u for u in updates if u.kind is UpdateKind.TEXT_DELTA]
    assert len(deltas) == 3 and "".join(u.text for u in deltas) == text
    assert [u.partial_value for u in deltas[:2]] == [
        {"city": "Be"},
        {"city": "Bergen", "days": [{}]},
    ]
    assert not any(u.kind is UpdateKind.TOOL_CALL_STARTED for u in updates)
    assert updates[-1].value == Forecast(city="Bergen", days=[Day(weekday="Tue", celsius=8)])
    assert updates[-1].finish_reason is FinishReason.STOP


def test_anthropic_refuses_a_tool_named_like_the_output_type() -> None:
    from raf.agent.output_type import resolve_output_type
    from raf.clients.anthropic.wire import MessagesWire
    from raf.clients.errors import BadRequestError
    from raf.core.function_tool import FunctionTool
    from raf.core.messages import ChatMessage
    from raf.core.options import ChatOptions

    def collide(city: str) -> str:
        """A tool that collides."""
        return city

    options = ChatOptions(
        tools=[FunctionTool(collide, name="Forecast")],
        output_schema=resolve_output_type(Forecast, where="x").schema,
    )
    with pytest.raises(BadRequestError, match="named 'Forecast' like the output type"):
        MessagesWire().request([ChatMessage.user("x")], options, model="m", stream=False)
