"""`TestModel`: a model for tests that needs no script. It calls every tool it is
offered once, with arguments made from the tool's JSON Schema, then answers with what
the tools returned (or, with an output type, JSON made from its schema)."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from raf.core.contents import FunctionCallContent, FunctionResultContent, TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse, FinishReason
from raf.core.usage import UsageDetails
from raf.testing.scripted import stream_response

__all__ = ["TestModel", "example_value"]

_FORMATS = {
    "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z",
    "time": "00:00:00",
    "email": "a@example.com",
    "uri": "https://example.com",
    "uuid": "00000000-0000-0000-0000-000000000000",
}


def example_value(schema: dict[str, Any], root: dict[str, Any] | None = None) -> Any:
    """A value that satisfies `schema` (its `$ref`s read from `root`): the first enum
    value, the smallest number and string allowed, every property of an object."""
    root = root if root is not None else schema
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        target: Any = root
        for part in ref[2:].split("/"):
            target = target[part]
        return example_value(target, root)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        options = [o for o in schema.get(key) or () if o.get("type") != "null"]
        if options:
            return example_value(options[0], root)
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object" or "properties" in schema:
        properties = schema.get("properties") or {}
        return {name: example_value(sub, root) for name, sub in properties.items()}
    if kind == "array":
        count = max(1, int(schema.get("minItems") or 0))
        return [example_value(schema.get("items") or {}, root) for _ in range(count)]
    if kind in ("integer", "number"):
        low = schema.get("minimum", schema.get("exclusiveMinimum"))
        value = 0 if low is None else low + (1 if "exclusiveMinimum" in schema else 0)
        return int(value) if kind == "integer" else float(value)
    if kind == "boolean":
        return False
    if kind == "string":
        found = _FORMATS.get(str(schema.get("format")))
        return found if found is not None else "a" * max(1, int(schema.get("minLength") or 1))
    return None


class TestModel:
    """A model that calls each offered tool once, then summarises what they returned.

    The first request of a turn (after the user's message) gets one call per tool, with
    arguments made from each tool's schema (`example_value`); the next gets the answer:
    a JSON object of each tool's result as the model read it, or JSON made from the
    output schema when the run asks for one, or `custom_output_text`. `call_tools`
    limits which tools are called; hosted tools (run by a provider) are never called.
    `requests` keeps what each request sent.
    """

    __test__ = False  # not a pytest test class, though its name starts with Test

    def __init__(
        self,
        *,
        call_tools: Sequence[str] | None = None,
        custom_output_text: str | None = None,
        chunk_size: int = 8,
    ) -> None:
        self.call_tools = None if call_tools is None else list(call_tools)
        self.custom_output_text = custom_output_text
        self.chunk_size = chunk_size
        self.requests: list[tuple[list[ChatMessage], ChatOptions]] = []
        self._calls = 0

    def __repr__(self) -> str:
        return f"TestModel(call_tools={self.call_tools!r})"

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        self.requests.append((list(messages), options))
        turn = _this_turn(messages)
        results = [c for m in turn for c in m.contents if isinstance(c, FunctionResultContent)]
        tools = [
            t
            for t in options.tools
            if getattr(t, "kind", "function") != "hosted"
            and (self.call_tools is None or t.name in self.call_tools)
        ]
        if tools and not results and options.tool_choice != "none":
            calls = [self._call(t.name, t.parameters) for t in tools]
            message = ChatMessage(role=Role.ASSISTANT, contents=list(calls))
            return _response(message, FinishReason.TOOL_CALLS, messages)
        message = ChatMessage(role=Role.ASSISTANT, contents=[TextContent(text=self._text(
            turn, results, options
        ))])  # fmt: skip
        return _response(message, FinishReason.STOP, messages)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        response = await self.get_response(messages, options)
        for update in stream_response(response, self.chunk_size):
            yield update

    def _call(self, name: str, schema: dict[str, Any]) -> FunctionCallContent:
        self._calls += 1
        arguments = example_value(schema)
        return FunctionCallContent(
            call_id=f"test_{name}_{self._calls}",
            name=name,
            arguments=arguments if isinstance(arguments, dict) else {},
        )

    def _text(
        self,
        turn: list[ChatMessage],
        results: list[FunctionResultContent],
        options: ChatOptions,
    ) -> str:
        if options.output_schema is not None:
            return json.dumps(example_value(options.output_schema.json_schema))
        if self.custom_output_text is not None:
            return self.custom_output_text
        if not results:
            return "success (no tool calls)"
        names = {
            c.call_id: c.name
            for m in turn
            for c in m.contents
            if isinstance(c, FunctionCallContent)
        }
        summary = {names.get(r.call_id, r.name or r.call_id): r.as_text() for r in results}
        return json.dumps(summary, ensure_ascii=False)


def _this_turn(messages: Sequence[ChatMessage]) -> list[ChatMessage]:
    """The messages after the last one the user wrote (this turn's calls and results)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role is Role.USER and any(isinstance(c, TextContent) for c in message.contents):
            return list(messages[index + 1 :])
    return list(messages)


def _response(
    message: ChatMessage, reason: FinishReason, messages: Sequence[ChatMessage]
) -> ChatResponse:
    read = sum(len(m.text.split()) for m in messages)
    written = len(message.text.split()) + len(message.contents)
    usage = UsageDetails(input_tokens=read, output_tokens=written, total_tokens=read + written)
    return ChatResponse(
        messages=[message], finish_reason=reason, usage=usage, model_id="test-model"
    )
