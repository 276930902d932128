"""A cassette records model responses once and replays them with no model at all."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from raf import Agent, tool
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.evals import (
    Case,
    CassetteChatClient,
    CassetteMissError,
    Contains,
    Dataset,
    ExpectedCall,
    ToolCalls,
)
from raf.testing import FunctionChatClient, call, reply


@tool
def lookup(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def model(messages: Sequence[ChatMessage], options: ChatOptions) -> Any:
    last = messages[-1]
    if last.role is Role.TOOL:
        return f"It is {last.function_results[0].result}."
    return reply("", call("lookup", city=last.text.split()[-1].strip("?")))


def suite() -> Dataset:
    return Dataset(
        cases=[
            Case(
                name=city,
                input=f"Weather in {city}?",
                expected_output=city,
                expected_tool_calls=[ExpectedCall(name="lookup", arguments={"city": city})],
            )
            for city in ("Oslo", "Lima", "Rome")
        ],
        evaluators=[Contains(), ToolCalls()],
    )


async def test_record_once_then_replay_without_the_model(tmp_path: Path) -> None:
    path = tmp_path / "cassette.json"
    live = FunctionChatClient(model)
    recorder = CassetteChatClient(path, live, mode="record")
    first = await suite().evaluate(Agent(chat_client=recorder, tools=[lookup]), progress=False)
    assert all(r.passed for r in first.results) and len(live.requests) == 6
    assert recorder.recorded == 6 and json.loads(path.read_text())["format"]

    replayer = CassetteChatClient(path, mode="replay")  # no model behind it
    again = await suite().evaluate(Agent(chat_client=replayer, tools=[lookup]), progress=False)
    assert [r.text for r in again.results] == [r.text for r in first.results]
    assert all(r.passed for r in again.results) and replayer.hits == 6


async def test_streaming_runs_replay_too(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    agent = Agent(chat_client=CassetteChatClient(path, FunctionChatClient(model)), tools=[lookup])
    recorded = [u.text async for u in agent.run_stream("Weather in Oslo?")]
    replay = Agent(chat_client=CassetteChatClient(path, mode="replay"), tools=[lookup])
    replayed = [u.text async for u in replay.run_stream("Weather in Oslo?")]
    assert "".join(replayed) == "".join(recorded) == "It is sunny in Oslo."


async def test_a_request_the_cassette_lacks_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    await Agent(chat_client=CassetteChatClient(path, FunctionChatClient(model))).run("hi Oslo")
    replay = Agent(chat_client=CassetteChatClient(path, mode="replay"))
    with pytest.raises(CassetteMissError, match="no response for request .* 'hi Paris'"):
        await replay.run("hi Paris")


def test_bad_cassettes_and_modes_are_configuration_errors(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match="no cassette to replay"):
        CassetteChatClient(tmp_path / "none.json", mode="replay")
    with pytest.raises(ConfigurationError, match="needs the model"):
        CassetteChatClient(tmp_path / "x.json", mode="once")
    broken = tmp_path / "b.json"
    broken.write_text("{\n oops")
    with pytest.raises(ConfigurationError, match=r"b\.json:2"):
        CassetteChatClient(broken, mode="replay")
