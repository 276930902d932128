"""The closed set of content variants a chat message is made of, and their JSON form."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias, assert_never

from raf.core.errors import SessionFormatError
from raf.core.usage import UsageDetails


@dataclass(kw_only=True, slots=True)
class TextContent:
    """Plain text written by a user or a model."""

    text: str
    type: Literal["text"] = "text"


@dataclass(kw_only=True, slots=True)
class ReasoningContent:
    """A model's visible reasoning (thinking); never sent back as an answer."""

    text: str
    signature: str | None = None
    """Opaque token some providers need to accept the reasoning back."""
    protected_data: str | None = None
    """Encrypted reasoning a provider returns instead of text (Anthropic's
    redacted_thinking); never shown, sent back as it came."""
    type: Literal["reasoning"] = "reasoning"


@dataclass(kw_only=True, slots=True)
class FunctionCallContent:
    """A model's request to call a tool."""

    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    raw_arguments: str | None = None
    """Arguments as the model sent them, kept when they were not valid JSON."""
    type: Literal["function_call"] = "function_call"


@dataclass(kw_only=True, slots=True)
class FunctionResultContent:
    """The outcome of one tool call: a result, or an error the model can read."""

    call_id: str
    result: Any = None
    error: str | None = None
    name: str | None = None
    """Name of the tool called, kept for readers of the transcript."""
    type: Literal["function_result"] = "function_result"

    @property
    def is_error(self) -> bool:
        return self.error is not None

    def as_text(self) -> str:
        """The result as the model reads it."""
        if self.error is not None:
            return f"Error: {self.error}"
        return result_to_text(self.result)


@dataclass(kw_only=True, slots=True)
class ApprovalRequestContent:
    """A tool call that waits for a human decision before it may run."""

    call_id: str
    name: str
    arguments: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    """Why approval is asked (for example: the path leaves the workspace)."""
    type: Literal["approval_request"] = "approval_request"


@dataclass(kw_only=True, slots=True)
class ApprovalResponseContent:
    """A human decision on one pending tool call."""

    call_id: str
    approved: bool
    reason: str | None = None
    arguments: dict[str, Any] | None = None
    """The arguments the human saw; when given they must equal the pending ones."""
    answer: dict[str, Any] | None = None
    """What the human filled in when the request asked for input (an MCP server's
    elicitation form); None for a plain yes or no."""
    type: Literal["approval_response"] = "approval_response"


@dataclass(kw_only=True, slots=True)
class UsageContent:
    """Token usage carried inside a message (as some providers stream it)."""

    usage: UsageDetails
    type: Literal["usage"] = "usage"


@dataclass(kw_only=True, slots=True)
class ErrorContent:
    """An error reported in the transcript (for example a failed stream)."""

    message: str
    code: str | None = None
    type: Literal["error"] = "error"


@dataclass(kw_only=True, slots=True)
class DataContent:
    """Binary data or a reference to it, by URI (`data:` URIs carry the bytes)."""

    uri: str
    media_type: str | None = None
    type: Literal["data"] = "data"


Content: TypeAlias = (
    TextContent
    | ReasoningContent
    | FunctionCallContent
    | FunctionResultContent
    | ApprovalRequestContent
    | ApprovalResponseContent
    | UsageContent
    | ErrorContent
    | DataContent
)


def result_to_text(result: Any) -> str:
    """Render a tool result as text: strings as they are, data (an image a tool returned)
    as a short placeholder, anything else as JSON."""
    if result is None:
        return ""
    if isinstance(result, str):
        return result
    if isinstance(result, DataContent):
        return f"[{result.media_type or 'data'} attachment]"
    if has_media(result):
        return "\n".join(result_to_text(r) for r in result if r is not None)
    try:
        return json.dumps(result, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(result)


def has_media(result: Any) -> bool:
    """Whether a tool result is or holds data contents (images, documents)."""
    if isinstance(result, DataContent):
        return True
    return isinstance(result, list) and any(isinstance(r, DataContent) for r in result)


def _result_to_json(result: Any) -> Any:
    if isinstance(result, DataContent):
        return content_to_dict(result)
    if isinstance(result, list):
        return [_result_to_json(r) for r in result]
    return _jsonable(result)


def _result_from_json(result: Any) -> Any:
    if isinstance(result, dict) and result.get("type") == "data":
        return content_from_dict(result)
    if isinstance(result, list):
        return [_result_from_json(r) for r in result]
    return result


def content_to_dict(content: Content) -> dict[str, Any]:
    """The one JSON form of a content, tagged by `type`."""
    match content:
        case TextContent(text=text):
            return {"type": "text", "text": text}
        case ReasoningContent(text=text, signature=signature, protected_data=protected):
            out: dict[str, Any] = {"type": "reasoning", "text": text}
            if signature is not None:
                out["signature"] = signature
            if protected is not None:
                out["protected_data"] = protected
            return out
        case FunctionCallContent():
            out = {
                "type": "function_call",
                "call_id": content.call_id,
                "name": content.name,
                "arguments": content.arguments,
            }
            if content.raw_arguments is not None:
                out["raw_arguments"] = content.raw_arguments
            return out
        case FunctionResultContent():
            out = {"type": "function_result", "call_id": content.call_id}
            if content.error is not None:
                out["error"] = content.error
            elif has_media(content.result):  # kept as data contents, marked to come back so
                out["result"] = _result_to_json(content.result)
                out["result_media"] = True
            else:
                out["result"] = _jsonable(content.result)
            if content.name is not None:
                out["name"] = content.name
            return out
        case ApprovalRequestContent():
            out = {
                "type": "approval_request",
                "call_id": content.call_id,
                "name": content.name,
                "arguments": content.arguments,
            }
            if content.reason is not None:
                out["reason"] = content.reason
            return out
        case ApprovalResponseContent():
            out = {
                "type": "approval_response",
                "call_id": content.call_id,
                "approved": content.approved,
            }
            if content.reason is not None:
                out["reason"] = content.reason
            if content.arguments is not None:
                out["arguments"] = content.arguments
            if content.answer is not None:
                out["answer"] = content.answer
            return out
        case UsageContent(usage=usage):
            return {"type": "usage", "usage": usage.to_dict()}
        case ErrorContent(message=message, code=code):
            out = {"type": "error", "message": message}
            if code is not None:
                out["code"] = code
            return out
        case DataContent(uri=uri, media_type=media_type):
            out = {"type": "data", "uri": uri}
            if media_type is not None:
                out["media_type"] = media_type
            return out
        case _:
            assert_never(content)


def content_from_dict(data: dict[str, Any]) -> Content:
    """Rebuild a content from its JSON form; unknown or damaged data is a clear error."""
    if not isinstance(data, dict):
        raise SessionFormatError(f"a content must be a JSON object, got {type(data).__name__}")
    kind = data.get("type")
    try:
        if kind == "text":
            return TextContent(text=str(data["text"]))
        if kind == "reasoning":
            return ReasoningContent(
                text=str(data["text"]),
                signature=data.get("signature"),
                protected_data=data.get("protected_data"),
            )
        if kind == "function_call":
            return FunctionCallContent(
                call_id=str(data["call_id"]),
                name=str(data["name"]),
                arguments=dict(data.get("arguments") or {}),
                raw_arguments=data.get("raw_arguments"),
            )
        if kind == "function_result":
            result = data.get("result")
            return FunctionResultContent(
                call_id=str(data["call_id"]),
                result=_result_from_json(result) if data.get("result_media") else result,
                error=data.get("error"),
                name=data.get("name"),
            )
        if kind == "approval_request":
            return ApprovalRequestContent(
                call_id=str(data["call_id"]),
                name=str(data["name"]),
                arguments=dict(data.get("arguments") or {}),
                reason=data.get("reason"),
            )
        if kind == "approval_response":
            return ApprovalResponseContent(
                call_id=str(data["call_id"]),
                approved=bool(data["approved"]),
                reason=data.get("reason"),
                arguments=data.get("arguments"),
                answer=data.get("answer"),
            )
        if kind == "usage":
            return UsageContent(usage=UsageDetails.from_dict(dict(data.get("usage") or {})))
        if kind == "error":
            return ErrorContent(message=str(data["message"]), code=data.get("code"))
        if kind == "data":
            return DataContent(uri=str(data["uri"]), media_type=data.get("media_type"))
    except KeyError as exc:
        raise SessionFormatError(f"content of type {kind!r} lacks the key {exc}") from None
    raise SessionFormatError(f"unknown content type {kind!r}")


def _jsonable(value: Any) -> Any:
    """Keep JSON values as they are; render anything else as text."""
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return result_to_text(value)
    return value
