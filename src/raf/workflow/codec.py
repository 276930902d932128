"""Plain-JSON form of the values a workflow keeps in checkpoints (never pickle).

JSON values stay as they are; raf messages, responses and contents use raf's own JSON
form; dataclasses, pydantic models and enums are tagged with their type, and a tag is
turned back into a value only when the graph declares that type (a checkpoint cannot
make the process import or build anything else).
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Mapping
from typing import Any

from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    UsageContent,
    content_from_dict,
    content_to_dict,
)
from raf.core.messages import ChatMessage
from raf.core.responses import AgentResponse, ChatResponse, FinishReason
from raf.core.usage import UsageDetails
from raf.workflow.errors import CheckpointError

TAG = "$type"
_CONTENTS = (
    TextContent,
    ReasoningContent,
    FunctionCallContent,
    FunctionResultContent,
    ApprovalRequestContent,
    ApprovalResponseContent,
    UsageContent,
    ErrorContent,
    DataContent,
)


def type_key(tp: type) -> str:
    """The name a type is stored under: `module:QualName`."""
    return f"{tp.__module__}:{tp.__qualname__}"


def encode(value: Any, *, strict: bool = True) -> Any:
    """`value` as plain JSON; with `strict`, a value that has no JSON form is an error."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [encode(v, strict=strict) for v in value]
    if isinstance(value, dict):
        if all(isinstance(k, str) for k in value) and TAG not in value:
            return {k: encode(v, strict=strict) for k, v in value.items()}
        return {
            TAG: "dict",
            "value": [
                [encode(k, strict=strict), encode(v, strict=strict)] for k, v in value.items()
            ],
        }
    if isinstance(value, ChatMessage):
        return {TAG: "raf.message", "value": value.to_dict()}
    if isinstance(value, ChatResponse):
        return {TAG: "raf.response", "value": _response_to_dict(value)}
    if isinstance(value, _CONTENTS):
        return {TAG: "raf.content", "value": content_to_dict(value)}
    if isinstance(value, enum.Enum):
        return {TAG: type_key(type(value)), "value": encode(value.value, strict=strict)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        fields = {
            f.name: encode(getattr(value, f.name), strict=strict)
            for f in dataclasses.fields(value)
            if f.init
        }
        return {TAG: type_key(type(value)), "value": fields}
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return {TAG: type_key(type(value)), "value": dump(mode="json")}
    if not strict:
        return repr(value)
    raise CheckpointError(
        f"a value of type {type(value).__qualname__} cannot be kept in a checkpoint: "
        "send JSON values, dataclasses, pydantic models or raf messages between nodes"
    )


def decode(data: Any, types: Mapping[str, type]) -> Any:
    """The value `encode` wrote; tagged types must be among `types` (the graph's)."""
    if isinstance(data, list):
        return [decode(v, types) for v in data]
    if not isinstance(data, dict):
        return data
    tag = data.get(TAG)
    if tag is None:
        return {k: decode(v, types) for k, v in data.items()}
    value: Any = data.get("value")
    if tag == "dict":
        return {decode(k, types): decode(v, types) for k, v in value}
    if tag == "raf.message":
        return ChatMessage.from_dict(value)
    if tag == "raf.response":
        return _response_from_dict(value)
    if tag == "raf.content":
        return content_from_dict(value)
    tp = types.get(tag)
    if tp is None:
        raise CheckpointError(
            f"the checkpoint holds a value of type {tag!r}, which no handler of this graph "
            "declares; resume with the graph that wrote it"
        )
    if issubclass(tp, enum.Enum):
        return tp(decode(value, types))
    if dataclasses.is_dataclass(tp):
        return tp(**{k: decode(v, types) for k, v in value.items()})
    validate = getattr(tp, "model_validate", None)
    if callable(validate):
        return validate(value)
    raise CheckpointError(f"type {tag!r} has no JSON form")


def _response_to_dict(response: ChatResponse) -> dict[str, Any]:
    out = response.to_dict()
    out["kind"] = "agent" if isinstance(response, AgentResponse) else "chat"
    if response.response_id is not None:
        out["response_id"] = response.response_id
    if isinstance(response, AgentResponse) and response.session_id is not None:
        out["session_id"] = response.session_id
    return out


def _response_from_dict(data: dict[str, Any]) -> ChatResponse:
    messages = [ChatMessage.from_dict(m) for m in data.get("messages", [])]
    reason = data.get("finish_reason")
    usage = data.get("usage")
    common: dict[str, Any] = {
        "messages": messages,
        "finish_reason": FinishReason(reason) if reason else None,
        "usage": UsageDetails.from_dict(usage) if usage else None,
        "model_id": data.get("model_id"),
        "response_id": data.get("response_id"),
    }
    if data.get("kind") == "agent":
        return AgentResponse(**common, session_id=data.get("session_id"))
    return ChatResponse(**common)
