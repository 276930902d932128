"""Model and tool results as raf's JSON, so a recorded step replays to the same value."""

from __future__ import annotations

import json
from typing import Any

from raf.core.contents import Content, content_from_dict, content_to_dict
from raf.core.errors import RafError
from raf.core.messages import ChatMessage
from raf.core.responses import ChatResponse, FinishReason
from raf.core.tools import ToolResult
from raf.core.usage import UsageDetails

_CONTENT = "__raf_content__"


def response_to_json(response: ChatResponse) -> dict[str, Any]:
    """A model call's result as JSON (its response id too)."""
    data = response.to_dict()
    if response.response_id is not None:
        data["response_id"] = response.response_id
    return data


def response_from_json(data: dict[str, Any]) -> ChatResponse:
    """The response `response_to_json` wrote."""
    finish = data.get("finish_reason")
    usage = data.get("usage")
    return ChatResponse(
        messages=[ChatMessage.from_dict(m) for m in data.get("messages", [])],
        finish_reason=FinishReason(finish) if finish is not None else None,
        usage=UsageDetails.from_dict(usage) if usage is not None else None,
        model_id=data.get("model_id"),
        response_id=data.get("response_id"),
    )


def _value_to_json(value: Any) -> Any:
    if isinstance(value, Content):
        return {_CONTENT: content_to_dict(value)}
    if isinstance(value, list | tuple):
        return [_value_to_json(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _value_to_json(v) for k, v in value.items()}
    return value


def _value_from_json(value: Any) -> Any:
    if isinstance(value, dict):
        if set(value) == {_CONTENT}:
            return content_from_dict(value[_CONTENT])
        return {k: _value_from_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_value_from_json(v) for v in value]
    return value


def tool_result_to_json(result: ToolResult | None, tool_name: str) -> dict[str, Any]:
    """A tool call's result as JSON; a value JSON cannot hold is refused by name, since
    a step that could not be replayed faithfully must not be recorded."""
    if result is None:
        return {"none": True}
    value = _value_to_json(result.value)
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        raise RafError(
            f"tool {tool_name!r} returned {type(result.value).__name__}, which a durable run "
            f"cannot record as JSON ({exc}); return JSON values or raf contents"
        ) from None
    return {"value": value, "error": result.error}


def tool_result_from_json(data: dict[str, Any]) -> ToolResult | None:
    """The result `tool_result_to_json` wrote."""
    if data.get("none"):
        return None
    return ToolResult(value=_value_from_json(data.get("value")), error=data.get("error"))
