"""Messages as the GenAI conventions record them (JSON of roles and parts), for spans
that capture content when the user turned it on."""

from __future__ import annotations

import json
from collections.abc import Sequence
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
)
from raf.core.messages import ChatMessage, Role


def _part(content: Any) -> dict[str, Any] | None:
    match content:
        case TextContent(text=text):
            return {"type": "text", "content": text}
        case ReasoningContent(text=text):
            return {"type": "reasoning", "content": text}
        case FunctionCallContent(call_id=call_id, name=name, arguments=arguments):
            return {"type": "tool_call", "id": call_id, "name": name, "arguments": arguments}
        case FunctionResultContent(call_id=call_id, result=result, error=error):
            response = {"error": error} if error is not None else result
            return {"type": "tool_call_response", "id": call_id, "response": response}
        case DataContent(uri=uri, media_type=media_type):
            return {"type": "uri", "uri": uri, "mime_type": media_type}
        case ErrorContent(message=message):
            return {"type": "error", "content": message}
        case ApprovalRequestContent() | ApprovalResponseContent() | UsageContent():
            return None
        case _:
            return None


def messages_json(messages: Sequence[ChatMessage], *, skip_system: bool = True) -> str:
    """The messages as `gen_ai.input.messages` / `gen_ai.output.messages` hold them."""
    out = []
    for message in messages:
        if skip_system and message.role is Role.SYSTEM:
            continue
        parts = [p for p in (_part(c) for c in message.contents) if p is not None]
        out.append({"role": message.role.value, "parts": parts})
    return json.dumps(out, ensure_ascii=False, default=str)


def system_json(messages: Sequence[ChatMessage]) -> str | None:
    """The system prompt as `gen_ai.system_instructions` holds it; None without one."""
    parts = [
        {"type": "text", "content": m.text} for m in messages if m.role is Role.SYSTEM and m.text
    ]
    return json.dumps(parts, ensure_ascii=False) if parts else None


def value_json(value: Any) -> str:
    """A tool's arguments or result as a string attribute."""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
