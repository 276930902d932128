"""The GenAI client histograms: tokens per model call by type, and call durations."""

from __future__ import annotations

from typing import Any

import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider

from raf import AgentBuilder, ChatOptions, FinishReason, UsageDetails
from raf.core.responses import ChatResponse
from raf.observability import instrument
from raf.testing import ScriptedChatClient, reply


def _points(reader: InMemoryMetricReader, name: str) -> list[HistogramDataPoint]:
    data = reader.get_metrics_data()
    assert data is not None
    found: list[HistogramDataPoint] = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                if metric.name == name:
                    found.extend(p for p in metric.data.data_points)  # type: ignore[misc]
    return found


def _attrs(point: HistogramDataPoint) -> dict[str, Any]:
    return dict(point.attributes or {})


def _answer(text: str, tokens: tuple[int, int]) -> ChatResponse:
    return ChatResponse(
        messages=[reply(text)],
        finish_reason=FinishReason.STOP,
        usage=UsageDetails(input_tokens=tokens[0], output_tokens=tokens[1]),
        model_id="m-2024",
    )


async def test_token_usage_and_duration_are_recorded_per_model_call() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    model = ScriptedChatClient([_answer("one", (11, 3)), _answer("two", (20, 5))])
    agent = instrument(
        AgentBuilder().with_chat_client(model).with_options(ChatOptions(model_id="m")),
        tracer_provider=TracerProvider(),
        meter_provider=meters,
    ).build()
    session = agent.create_session()
    await agent.run("a", session=session)
    await agent.run("b", session=session)

    tokens = _points(reader, "gen_ai.client.token.usage")
    by_type: dict[Any, HistogramDataPoint] = {_attrs(p)["gen_ai.token.type"]: p for p in tokens}
    assert set(by_type) == {"input", "output"}
    assert (by_type["input"].count, by_type["input"].sum) == (2, 31)
    assert (by_type["output"].count, by_type["output"].sum) == (2, 8)
    assert _attrs(by_type["input"]) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "ScriptedChatClient",
        "gen_ai.request.model": "m",
        "gen_ai.response.model": "m-2024",
        "gen_ai.token.type": "input",
    }
    # the conventions' advised buckets, not the SDK's default ones
    assert list(by_type["input"].explicit_bounds)[:3] == [1, 4, 16]

    (duration,) = _points(reader, "gen_ai.client.operation.duration")
    assert duration.count == 2
    assert duration.sum > 0
    assert "error.type" not in _attrs(duration)
    meters.shutdown()


async def test_a_failed_model_call_records_its_duration_with_the_error_type() -> None:
    reader = InMemoryMetricReader()
    meters = MeterProvider(metric_readers=[reader])
    model = ScriptedChatClient([TimeoutError("slow")])
    agent = instrument(
        AgentBuilder().with_chat_client(model),
        tracer_provider=TracerProvider(),
        meter_provider=meters,
    ).build()
    with pytest.raises(TimeoutError):
        await agent.run("a")
    (duration,) = _points(reader, "gen_ai.client.operation.duration")
    assert _attrs(duration)["error.type"] == "TimeoutError"
    assert _points(reader, "gen_ai.client.token.usage") == []
    meters.shutdown()
