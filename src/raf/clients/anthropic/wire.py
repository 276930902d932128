"""The Messages API wire format (Anthropic) as plain dicts: raf messages out, updates back in."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from raf.clients.errors import BadRequestError, InvalidResponseError
from raf.clients.hosted_tools import refuse_hosted
from raf.clients.media import anthropic_block, result_parts
from raf.clients.wire import parse_arguments
from raf.core.contents import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    has_media,
)
from raf.core.messages import ChatMessage, Role, new_id
from raf.core.options import ChatOptions, ToolChoice
from raf.core.output import OutputSchema
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.tools import Tool
from raf.core.usage import UsageDetails

DEFAULT_MAX_TOKENS = 4096

_STOP = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.CONTENT_FILTER,
}


def to_anthropic_messages(
    messages: Sequence[ChatMessage],
) -> tuple[str | None, list[dict[str, Any]]]:
    """The system prompt and the alternating user/assistant turns Anthropic expects."""
    system: list[str] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            system.append(message.text)
            continue
        blocks: list[dict[str, Any]] = []
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        for content in message.contents:
            if isinstance(content, TextContent) and content.text:
                blocks.append({"type": "text", "text": content.text})
            elif isinstance(content, ReasoningContent) and role == "assistant":
                if content.protected_data is not None:
                    blocks.append({"type": "redacted_thinking", "data": content.protected_data})
                elif content.signature:  # unsigned thinking cannot be sent back
                    blocks.append(
                        {
                            "type": "thinking",
                            "thinking": content.text,
                            "signature": content.signature,
                        }
                    )
            elif isinstance(content, FunctionCallContent) and role == "assistant":
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": content.call_id,
                        "name": content.name,
                        "input": content.arguments,
                    }
                )
            elif isinstance(content, DataContent) and role == "user":
                blocks.append(anthropic_block(content))
            elif isinstance(content, FunctionResultContent) and message.role is not Role.ASSISTANT:
                # (an answer's own results are a hosted tool's, which the answer already read)
                role = "user"
                result: Any = content.as_text()
                if content.error is None and has_media(content.result):
                    result = result_parts(
                        content.result, anthropic_block, lambda t: {"type": "text", "text": t}
                    )
                blocks.append(
                    {
                        "type": "tool_result",
                        "tool_use_id": content.call_id,
                        "content": result,
                        "is_error": content.is_error,
                    }
                )
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)  # parallel results share one user turn
        else:
            out.append({"role": role, "content": blocks})
    return ("\n\n".join(s for s in system if s) or None), out


def to_anthropic_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    refuse_hosted(tools, "Anthropic's Messages API")
    return [
        {"name": t.name, "description": t.description, "input_schema": t.parameters} for t in tools
    ]


def to_anthropic_tool_choice(choice: ToolChoice | None) -> dict[str, Any] | None:
    if choice is None:
        return None
    if choice == "auto":
        return {"type": "auto"}
    if choice == "required":
        return {"type": "any"}
    if choice == "none":
        return {"type": "none"}
    return {"type": "tool", "name": choice}


def usage_from(data: Mapping[str, Any] | None) -> UsageDetails:
    """raf usage; `input_tokens` counts the whole prompt, cached parts included."""
    data = data or {}
    fresh = int(data.get("input_tokens") or 0)
    read = int(data.get("cache_read_input_tokens") or 0)
    write = int(data.get("cache_creation_input_tokens") or 0)
    output = int(data.get("output_tokens") or 0)
    prompt = fresh + read + write
    return UsageDetails(
        input_tokens=prompt,
        output_tokens=output,
        total_tokens=prompt + output,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )


class MessagesAssembler:
    """Turns Messages API stream events (dicts) into raf updates under one message id."""

    def __init__(self, message_id: str, output_tool: str | None = None) -> None:
        self.message_id = message_id
        self.output_tool = output_tool
        """The forced output tool: its input is the answer, passed on as text."""
        self._answered = False
        self._called = False
        self.response_id: str | None = None
        self.model_id: str | None = None
        self.stopped = False
        self.events = 0
        self._usage: dict[str, Any] = {}
        self._blocks: dict[int, dict[str, Any]] = {}
        self._stop: FinishReason | None = None

    def _update(self, kind: UpdateKind, **kwargs: Any) -> AgentResponseUpdate:
        return AgentResponseUpdate(kind=kind, message_id=self.message_id, **kwargs)

    def feed(self, event: dict[str, Any]) -> list[AgentResponseUpdate]:
        self.events += 1
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message") or {}
            self.response_id = message.get("id")
            self.model_id = message.get("model")
            self._usage.update({k: v for k, v in (message.get("usage") or {}).items() if v})
            return []
        if kind == "content_block_start":
            return self._start(int(event.get("index") or 0), event.get("content_block") or {})
        if kind == "content_block_delta":
            return self._delta(int(event.get("index") or 0), event.get("delta") or {})
        if kind == "content_block_stop":
            return self._stop_block(int(event.get("index") or 0))
        if kind == "message_delta":
            delta = event.get("delta") or {}
            reason = delta.get("stop_reason")
            if reason:
                self._stop = _STOP.get(reason, FinishReason.OTHER)
            self._usage.update({k: v for k, v in (event.get("usage") or {}).items() if v})
            return []
        if kind == "message_stop":
            self.stopped = True
        if kind == "error":
            error = event.get("error") or {}
            raise InvalidResponseError(
                f"anthropic reported an error in the stream: {error.get('message', error)}",
                provider="anthropic",
                retryable=error.get("type") in ("overloaded_error", "api_error"),
            )
        return []

    def _start(self, index: int, block: dict[str, Any]) -> list[AgentResponseUpdate]:
        btype = block.get("type")
        state: dict[str, Any] = {"type": btype, "parts": []}
        self._blocks[index] = state
        out: list[AgentResponseUpdate] = []
        if btype == "tool_use" and self.output_tool and block.get("name") == self.output_tool:
            state["type"] = "output"
            state["input"] = block.get("input") or {}
            self._answered = True
        elif btype == "tool_use":
            self._called = True
            state["id"] = block.get("id") or new_id("call")
            state["name"] = block.get("name") or ""
            state["input"] = block.get("input") or {}
            out.append(
                self._update(
                    UpdateKind.TOOL_CALL_STARTED, call_id=state["id"], tool_name=state["name"]
                )
            )
        elif btype == "text" and block.get("text"):
            out.append(self._update(UpdateKind.TEXT_DELTA, text=block["text"]))
        elif btype == "redacted_thinking":
            # Encrypted reasoning: kept whole so it can be sent back with the next turn.
            out.append(
                self._update(
                    UpdateKind.CONTENT,
                    content=ReasoningContent(text="", protected_data=str(block.get("data", ""))),
                )
            )
        elif btype == "thinking":
            if block.get("thinking"):
                out.append(self._update(UpdateKind.REASONING_DELTA, text=block["thinking"]))
            if block.get("signature"):
                out.append(self._signature(block["signature"]))
        return out

    def _signature(self, signature: str) -> AgentResponseUpdate:
        return self._update(
            UpdateKind.REASONING_DELTA, content=ReasoningContent(text="", signature=signature)
        )

    def _delta(self, index: int, delta: dict[str, Any]) -> list[AgentResponseUpdate]:
        state = self._blocks.get(index) or {"type": None, "parts": []}
        dtype = delta.get("type")
        if dtype == "text_delta" and delta.get("text"):
            return [self._update(UpdateKind.TEXT_DELTA, text=delta["text"])]
        if dtype == "thinking_delta" and delta.get("thinking"):
            return [self._update(UpdateKind.REASONING_DELTA, text=delta["thinking"])]
        if dtype == "signature_delta" and delta.get("signature"):
            return [self._signature(delta["signature"])]
        if dtype == "input_json_delta" and state["type"] == "output":
            piece = delta.get("partial_json") or ""
            if piece:
                state["parts"].append(piece)
                return [self._update(UpdateKind.TEXT_DELTA, text=piece)]
        elif dtype == "input_json_delta":
            piece = delta.get("partial_json") or ""
            if piece:
                state["parts"].append(piece)
                return [
                    self._update(
                        UpdateKind.TOOL_CALL_ARGUMENTS_DELTA,
                        text=piece,
                        call_id=state.get("id", ""),
                        tool_name=state.get("name", ""),
                    )
                ]
        return []

    def _stop_block(self, index: int) -> list[AgentResponseUpdate]:
        state = self._blocks.pop(index, None)
        if state and state["type"] == "output":
            if state["parts"]:  # streamed already, as text
                return []
            text = json.dumps(state["input"], ensure_ascii=False)
            return [self._update(UpdateKind.TEXT_DELTA, text=text)]
        if not state or state["type"] != "tool_use":
            return []
        raw = "".join(state["parts"])
        if raw:
            arguments, kept = parse_arguments(raw)
        else:
            arguments, kept = dict(state.get("input") or {}), None
        content = FunctionCallContent(
            call_id=state["id"], name=state["name"], arguments=arguments, raw_arguments=kept
        )
        return [
            self._update(
                UpdateKind.TOOL_CALL_ENDED,
                content=content,
                call_id=content.call_id,
                tool_name=content.name,
            )
        ]

    @property
    def finished(self) -> bool:
        """Whether `message_stop` arrived (a stream without it was cut)."""
        return self.stopped

    def finish(self) -> list[AgentResponseUpdate]:
        out = [self._update(UpdateKind.USAGE, usage=usage_from(self._usage))]
        stop = self._stop or FinishReason.STOP
        if stop is FinishReason.TOOL_CALLS and self._answered and not self._called:
            stop = FinishReason.STOP  # the output tool's call is the answer
        out.append(self._update(UpdateKind.FINISHED, finish_reason=stop))
        return out


def message_to_events(message: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole Messages API response as the events its stream would have sent."""
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": {**message, "content": []}}
    ]
    for index, block in enumerate(message.get("content") or ()):
        events.append({"type": "content_block_start", "index": index, "content_block": block})
        events.append({"type": "content_block_stop", "index": index})
    events.append({"type": "message_delta", "delta": {"stop_reason": message.get("stop_reason")}})
    events.append({"type": "message_stop"})
    return events


@dataclass(kw_only=True, slots=True)
class MessagesWire:
    """Request bodies and answers of the Messages API (`POST /v1/messages`)."""

    max_tokens: int = DEFAULT_MAX_TOKENS
    """Sent when the options set none: the Messages API requires a limit."""
    output_tool: str | None = None
    """The tool whose forced call carries a structured answer (set per call)."""

    def for_options(self, options: ChatOptions) -> MessagesWire:
        """This format for one call: with an output schema, its output tool is known."""
        output = options.output_schema
        return self if output is None else replace(self, output_tool=output.name)

    def request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        system, turns = to_anthropic_messages(messages)
        body: dict[str, Any] = {
            "model": model,
            "messages": turns,
            "max_tokens": options.max_tokens or self.max_tokens,
        }
        if system:
            body["system"] = system
        if options.tools and options.tool_choice != "none":
            body["tools"] = to_anthropic_tools(options.tools)
            choice = to_anthropic_tool_choice(options.tool_choice)
            if choice is not None:
                body["tool_choice"] = choice
        if options.output_schema is not None:
            _ask_for_output(body, options.output_schema)
        if options.temperature is not None:
            body["temperature"] = options.temperature
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.stop:
            body["stop_sequences"] = list(options.stop)
        if stream:
            body["stream"] = True
        body.update(options.additional)
        return body

    def assembler(self, message_id: str) -> MessagesAssembler:
        return MessagesAssembler(message_id, self.output_tool)

    def parse(self, data: dict[str, Any], message_id: str) -> list[AgentResponseUpdate] | None:
        assembler = MessagesAssembler(message_id, self.output_tool)
        updates: list[AgentResponseUpdate] = []
        for event in message_to_events(data):
            updates.extend(assembler.feed(event))
        return updates + assembler.finish()


def _ask_for_output(body: dict[str, Any], output: OutputSchema) -> None:
    """Offer the output tool and force a call: of it alone, or (other tools offered) of
    any tool, so the model may still call tools before it answers."""
    tools = body.setdefault("tools", [])
    if any(t.get("name") == output.name for t in tools):
        raise BadRequestError(
            f"a tool is named {output.name!r} like the output type; rename the tool",
            provider="anthropic",
        )
    tools.append(
        {
            "name": output.name,
            "description": output.description or "Give the final answer.",
            "input_schema": output.json_schema,
        }
    )
    if len(tools) == 1:
        body["tool_choice"] = {"type": "tool", "name": output.name}
    elif body.get("tool_choice", {}).get("type") in (None, "auto"):
        body["tool_choice"] = {"type": "any"}
