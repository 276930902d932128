"""The chat-completions wire format as plain dicts: raf messages out, updates back in.

Shared by the OpenAI-compatible clients (OpenAI, Gemini's compatible endpoint, Ollama,
vLLM, ...) and the embedded local model (llama.cpp answers in the same format), so all
of them stream and fold the same way.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raf.clients.hosted_tools import refuse_hosted
from raf.clients.media import chat_completions_part
from raf.clients.strict_schema import strict_json_schema
from raf.clients.wire import parse_arguments
from raf.core.contents import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    TextContent,
    has_media,
)
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions, ToolChoice
from raf.core.output import OutputSchema
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.tools import Tool
from raf.core.usage import UsageDetails

_FINISH = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}


def finish_reason(value: str | None) -> FinishReason | None:
    if value is None:
        return None
    return _FINISH.get(value, FinishReason.OTHER)


def usage_from(data: dict[str, Any] | None) -> UsageDetails | None:
    """raf usage from an OpenAI `usage` object."""
    if not data:
        return None
    prompt_details = data.get("prompt_tokens_details") or {}
    completion_details = data.get("completion_tokens_details") or {}
    prompt = int(data.get("prompt_tokens") or 0)
    completion = int(data.get("completion_tokens") or 0)
    return UsageDetails(
        input_tokens=prompt,
        output_tokens=completion,
        total_tokens=int(data.get("total_tokens") or prompt + completion),
        cache_read_tokens=int(prompt_details.get("cached_tokens") or 0),
        reasoning_tokens=int(completion_details.get("reasoning_tokens") or 0),
    )


def to_openai_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """raf messages as chat-completions messages; approvals and usage stay behind."""
    out: list[dict[str, Any]] = []
    for message in messages:
        role = message.role
        if role is Role.SYSTEM:
            out.append({"role": "system", "content": message.text})
        elif role is Role.ASSISTANT:
            text = message.text
            calls = [
                {
                    "id": c.call_id,
                    "type": "function",
                    "function": {
                        "name": c.name,
                        "arguments": c.raw_arguments
                        if c.raw_arguments is not None
                        else json.dumps(c.arguments, ensure_ascii=False),
                    },
                }
                for c in message.contents
                if isinstance(c, FunctionCallContent)
            ]
            if not text and not calls:
                continue
            entry: dict[str, Any] = {"role": "assistant", "content": text or None}
            if calls:
                entry["tool_calls"] = calls
            if message.author_name:
                entry["name"] = message.author_name
            out.append(entry)
        else:
            # user and tool messages: results become `tool` messages, text a user message.
            text_parts: list[str] = []
            data: list[dict[str, Any]] = []
            returned: list[dict[str, Any]] = []
            for content in message.contents:
                if isinstance(content, FunctionResultContent):
                    out.append(
                        {
                            "role": "tool",
                            "tool_call_id": content.call_id,
                            "content": content.as_text(),
                        }
                    )
                    if content.error is None and has_media(content.result):
                        returned.extend(_returned_media(content))
                elif isinstance(content, TextContent):
                    text_parts.append(content.text)
                elif isinstance(content, DataContent):
                    data.append(chat_completions_part(content))
            if data:  # parts only when there is more than text (servers without vision)
                parts = [{"type": "text", "text": t} for t in text_parts]
                entry = {"role": "user", "content": [*parts, *data]}
                if message.author_name:
                    entry["name"] = message.author_name
                out.append(entry)
            elif text_parts:
                entry = {"role": "user", "content": "".join(text_parts)}
                if message.author_name:
                    entry["name"] = message.author_name
                out.append(entry)
            if returned:  # a tool message holds only text: its media follow as the user's
                out.append({"role": "user", "content": returned})
    return out


def _returned_media(content: FunctionResultContent) -> list[dict[str, Any]]:
    label = {"type": "text", "text": f"(returned by the tool call {content.call_id})"}
    items = content.result if isinstance(content.result, list) else [content.result]
    return [label, *(chat_completions_part(i) for i in items if isinstance(i, DataContent))]


def to_openai_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    refuse_hosted(tools, "chat completions")
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def to_openai_tool_choice(choice: ToolChoice | None) -> Any:
    """`auto`/`none`/`required` pass through; any other string names one tool."""
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


@dataclass(slots=True)
class _PendingCall:
    call_id: str
    name: str
    parts: list[str] = field(default_factory=list)


class ChunkAssembler:
    """Turns chat-completion chunks (dicts) into raf updates, all under one message id.

    Tool calls are announced when their first chunk arrives, their argument text is
    passed on as deltas, and each is completed (parsed) when the stream finishes.
    """

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self.response_id: str | None = None
        self.model_id: str | None = None
        self.events = 0
        self._calls: dict[int, _PendingCall] = {}
        self._finish: FinishReason | None = None
        self._usage: UsageDetails | None = None

    def _update(self, kind: UpdateKind, **kwargs: Any) -> AgentResponseUpdate:
        return AgentResponseUpdate(kind=kind, message_id=self.message_id, **kwargs)

    def feed(self, chunk: dict[str, Any]) -> list[AgentResponseUpdate]:
        self.events += 1
        self.response_id = self.response_id or chunk.get("id")
        self.model_id = self.model_id or chunk.get("model")
        out: list[AgentResponseUpdate] = []
        usage = usage_from(chunk.get("usage"))
        if usage is not None:
            self._usage = usage
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta") or {}
            reasoning = delta.get("reasoning_content") or delta.get("reasoning")
            if isinstance(reasoning, str) and reasoning:
                out.append(self._update(UpdateKind.REASONING_DELTA, text=reasoning))
            text = delta.get("content")
            if isinstance(text, str) and text:
                out.append(self._update(UpdateKind.TEXT_DELTA, text=text))
            for call in delta.get("tool_calls") or ():
                out.extend(self._call_delta(call))
            reason = finish_reason(choice.get("finish_reason"))
            if reason is not None:
                self._finish = reason
        return out

    def _index(self, call: dict[str, Any]) -> int:
        """The call's index; servers that omit it (Gemini's compatible API) get one by id."""
        if call.get("index") is not None:
            return int(call["index"])
        call_id = call.get("id")
        for index, pending in self._calls.items():
            if call_id and pending.call_id == call_id:
                return index
        if call_id or not self._calls:
            return max(self._calls, default=-1) + 1  # a new call
        return max(self._calls)  # more arguments for the latest call

    def _call_delta(self, call: dict[str, Any]) -> list[AgentResponseUpdate]:
        index = self._index(call)
        function = call.get("function") or {}
        pending = self._calls.get(index)
        out: list[AgentResponseUpdate] = []
        if pending is None:
            pending = _PendingCall(
                call_id=call.get("id") or f"call_{self.message_id}_{index}",
                name=function.get("name") or "",
            )
            self._calls[index] = pending
            out.append(
                self._update(
                    UpdateKind.TOOL_CALL_STARTED, call_id=pending.call_id, tool_name=pending.name
                )
            )
        elif function.get("name") and not pending.name:
            pending.name = function["name"]
        piece = function.get("arguments")
        if piece:
            pending.parts.append(piece)
            out.append(
                self._update(
                    UpdateKind.TOOL_CALL_ARGUMENTS_DELTA,
                    text=piece,
                    call_id=pending.call_id,
                    tool_name=pending.name,
                )
            )
        return out

    @property
    def finished(self) -> bool:
        """Whether the server sent a finish reason (a stream without one was cut)."""
        return self._finish is not None

    def finish(self) -> list[AgentResponseUpdate]:
        """Complete the pending calls, then usage and the finish reason."""
        out: list[AgentResponseUpdate] = []
        for index in sorted(self._calls):
            pending = self._calls[index]
            arguments, raw = parse_arguments("".join(pending.parts))
            content = FunctionCallContent(
                call_id=pending.call_id, name=pending.name, arguments=arguments, raw_arguments=raw
            )
            out.append(
                self._update(
                    UpdateKind.TOOL_CALL_ENDED,
                    content=content,
                    call_id=pending.call_id,
                    tool_name=pending.name,
                )
            )
        self._calls.clear()
        if self._usage is not None:
            out.append(self._update(UpdateKind.USAGE, usage=self._usage))
        reason = self._finish
        if reason is None:
            called = any(u.kind is UpdateKind.TOOL_CALL_ENDED for u in out)
            reason = FinishReason.TOOL_CALLS if called else FinishReason.STOP
        out.append(self._update(UpdateKind.FINISHED, finish_reason=reason))
        return out


def completion_to_updates(completion: dict[str, Any], message_id: str) -> list[AgentResponseUpdate]:
    """A whole chat completion as the updates its stream would have folded from."""
    assembler = ChunkAssembler(message_id)
    choices = completion.get("choices") or []
    chunk_choices = []
    for choice in choices:
        message = choice.get("message") or {}
        calls = [{**call, "index": i} for i, call in enumerate(message.get("tool_calls") or ())]
        chunk_choices.append(
            {
                "index": choice.get("index", 0),
                "delta": {
                    "reasoning_content": message.get("reasoning_content")
                    or message.get("reasoning"),
                    "content": message.get("content"),
                    "tool_calls": calls,
                },
                "finish_reason": choice.get("finish_reason"),
            }
        )
    updates = assembler.feed(
        {
            "id": completion.get("id"),
            "model": completion.get("model"),
            "choices": chunk_choices,
            "usage": completion.get("usage"),
        }
    )
    # Progress-only updates carry nothing a fold keeps; drop them from the whole answer.
    kept = [
        u
        for u in updates
        if u.kind not in (UpdateKind.TOOL_CALL_STARTED, UpdateKind.TOOL_CALL_ARGUMENTS_DELTA)
    ]
    return kept + assembler.finish()


_PASSED = ("temperature", "top_p", "stop", "seed", "response_format")


def response_format(output: OutputSchema) -> dict[str, Any]:
    """The strict `json_schema` response format asking for `output`."""
    spec: dict[str, Any] = {
        "name": output.name,
        "schema": strict_json_schema(output),
        "strict": True,
    }
    if output.description:
        spec["description"] = output.description
    return {"type": "json_schema", "json_schema": spec}


@dataclass(kw_only=True, slots=True)
class ChatCompletionsWire:
    """Request bodies and answers of the chat-completions API (`POST /chat/completions`)."""

    max_tokens_field: str = "max_tokens"
    """OpenAI's own API replaced `max_tokens` by `max_completion_tokens` (reasoning models
    refuse the old name); most other servers know only the old one."""
    stream_usage: bool = True
    """Ask for usage in the stream's last chunk (`stream_options.include_usage`)."""

    def request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"model": model, "messages": to_openai_messages(messages)}
        if options.tools and options.tool_choice != "none":
            body["tools"] = to_openai_tools(options.tools)
            if options.tool_choice is not None:
                body["tool_choice"] = to_openai_tool_choice(options.tool_choice)
        for name in _PASSED:
            value = getattr(options, name)
            if value is not None:
                body[name] = value
        if options.max_tokens is not None:
            body[self.max_tokens_field] = options.max_tokens
        if stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        if options.output_schema is not None:
            body["response_format"] = response_format(options.output_schema)
        body.update(options.additional)
        return body

    def check_output_schema(self, output: OutputSchema) -> None:
        """Refuse a schema strict mode cannot express (naming the field)."""
        strict_json_schema(output)

    def assembler(self, message_id: str) -> ChunkAssembler:
        return ChunkAssembler(message_id)

    def parse(self, data: dict[str, Any], message_id: str) -> list[AgentResponseUpdate] | None:
        if not data.get("choices"):
            return None
        return completion_to_updates(data, message_id)
