"""What a step records: model and tool results round-trip through raf's JSON exactly."""

from __future__ import annotations

import json

import pytest

from raf.core.contents import DataContent, FunctionCallContent, TextContent
from raf.core.errors import RafError
from raf.core.messages import ChatMessage, Role
from raf.core.responses import ChatResponse, FinishReason
from raf.core.tools import ToolResult
from raf.core.usage import UsageDetails
from raf.durable import (
    response_from_json,
    response_to_json,
    tool_result_from_json,
    tool_result_to_json,
)


def test_a_model_response_round_trips_through_json() -> None:
    response = ChatResponse(
        messages=[
            ChatMessage(
                role=Role.ASSISTANT,
                contents=[
                    TextContent(text="let me look"),
                    FunctionCallContent(call_id="c1", name="find", arguments={"q": "owls"}),
                ],
                message_id="m1",
            )
        ],
        finish_reason=FinishReason.TOOL_CALLS,
        usage=UsageDetails(input_tokens=12, output_tokens=5, total_tokens=17),
        model_id="scripted",
        response_id="r1",
    )
    data = json.loads(json.dumps(response_to_json(response)))  # what the database keeps
    assert response_from_json(data) == response


def test_tool_results_round_trip_and_unrecordable_values_are_refused() -> None:
    value = {"rows": [1, 2], "picture": DataContent(uri="data:image/png;base64,AAAA")}
    for result in (ToolResult.ok(value), ToolResult.fail("no such file"), None):
        data = json.loads(json.dumps(tool_result_to_json(result, "t")))
        assert tool_result_from_json(data) == result
    with pytest.raises(RafError, match="tool 'odd' returned object, which a durable run"):
        tool_result_to_json(ToolResult.ok(object()), "odd")
