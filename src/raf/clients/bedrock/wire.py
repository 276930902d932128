"""Amazon Bedrock's Converse API as boto3 arguments: raf messages out, updates back in.

Converse wants user and assistant turns to alternate, tool results inside user turns
and bytes (not base64) for images, documents and audio; boto3 encodes them. A streamed
answer (ConverseStream) arrives as the events `messageStart`, `contentBlockStart`,
`contentBlockDelta`, `contentBlockStop`, `messageStop` and `metadata`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raf.clients.hosted_tools import refuse_hosted
from raf.clients.media import AUDIO_TYPES, DOCUMENT_TYPES, IMAGE_TYPES, MediaError, decode
from raf.clients.strict_schema import strict_json_schema
from raf.clients.wire import parse_arguments
from raf.core.contents import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
)
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions, ToolChoice
from raf.core.output import OutputSchema
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.usage import UsageDetails

_FINISH = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "tool_use": FinishReason.TOOL_CALLS,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "content_filtered": FinishReason.CONTENT_FILTER,
    "guardrail_intervened": FinishReason.CONTENT_FILTER,
}
BEDROCK_TYPES = (*IMAGE_TYPES, *DOCUMENT_TYPES, *AUDIO_TYPES)


def media_block(content: DataContent) -> dict[str, Any]:
    """An image, document or audio block with its bytes (Converse takes no links)."""
    media = decode(content, BEDROCK_TYPES, api="Bedrock's Converse API")
    if media.data is None:
        raise MediaError(
            f"Bedrock's Converse API takes {media.family}s as bytes, not links "
            f"({media.url!r}); read it with raf.clients.media.attachment"
        )
    subtype = media.media_type.split("/", 1)[1]
    if media.family == "image":
        return {"image": {"format": subtype, "source": {"bytes": media.data}}}
    if media.family == "audio":
        audio_format = "wav" if "wav" in media.media_type else "mp3"
        return {"audio": {"format": audio_format, "source": {"bytes": media.data}}}
    return {"document": {"format": "pdf", "name": "attachment", "source": {"bytes": media.data}}}


def _tool_result(content: FunctionResultContent) -> dict[str, Any]:
    parts: list[dict[str, Any]] = []
    results = content.result if isinstance(content.result, list) else [content.result]
    if content.error is None and any(isinstance(r, DataContent) for r in results):
        for result in results:
            if isinstance(result, DataContent):
                parts.append(media_block(result))
            elif result is not None:
                parts.append({"text": FunctionResultContent(call_id="", result=result).as_text()})
    else:
        parts.append({"text": content.as_text() or "(no output)"})
    block: dict[str, Any] = {"toolUseId": content.call_id, "content": parts}
    if content.error is not None:
        block["status"] = "error"
    return {"toolResult": block}


def _blocks(message: ChatMessage) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            if content.text:
                blocks.append({"text": content.text})
        elif isinstance(content, DataContent):
            blocks.append(media_block(content))
        elif isinstance(content, FunctionCallContent):
            blocks.append(
                {
                    "toolUse": {
                        "toolUseId": content.call_id,
                        "name": content.name,
                        "input": content.arguments,
                    }
                }
            )
        elif isinstance(content, FunctionResultContent) and message.role is not Role.ASSISTANT:
            blocks.append(_tool_result(content))  # (an answer's own: a hosted tool's result)
        elif (
            isinstance(content, ReasoningContent)
            and message.role is Role.ASSISTANT
            and content.signature  # unsigned reasoning is refused when sent back
        ):
            text = {"text": content.text, "signature": content.signature}
            blocks.append({"reasoningContent": {"reasoningText": text}})
    return blocks


def to_converse(messages: Sequence[ChatMessage]) -> tuple[list[dict[str, Any]], list[Any]]:
    """System prompts and Converse messages, same-role turns merged so they alternate."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            system.append({"text": message.text})
            continue
        role = "assistant" if message.role is Role.ASSISTANT else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})
    return system, out


def tool_choice(choice: ToolChoice | None) -> dict[str, Any] | None:
    if choice is None or choice == "auto":
        return {"auto": {}}
    if choice == "required":
        return {"any": {}}
    if choice == "none":
        return None
    return {"tool": {"name": choice}}


def usage_from(data: dict[str, Any] | None) -> UsageDetails | None:
    if not data:
        return None
    given = int(data.get("inputTokens") or 0)
    made = int(data.get("outputTokens") or 0)
    return UsageDetails(
        input_tokens=given,
        output_tokens=made,
        total_tokens=int(data.get("totalTokens") or given + made),
        cache_read_tokens=int(data.get("cacheReadInputTokens") or 0),
        cache_write_tokens=int(data.get("cacheWriteInputTokens") or 0),
    )


@dataclass(slots=True)
class _Block:
    call: FunctionCallContent | None = None
    parts: list[str] = field(default_factory=list)


class ConverseAssembler:
    """Turns ConverseStream events (dicts) into raf updates under one message id."""

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self.response_id: str | None = None
        self.model_id: str | None = None
        self.events = 0
        self._blocks: dict[int, _Block] = {}
        self._finish: FinishReason | None = None
        self._usage: UsageDetails | None = None
        self._stopped = False

    def _update(self, kind: UpdateKind, **kwargs: Any) -> AgentResponseUpdate:
        return AgentResponseUpdate(kind=kind, message_id=self.message_id, **kwargs)

    def feed(self, event: dict[str, Any]) -> list[AgentResponseUpdate]:
        self.events += 1
        out: list[AgentResponseUpdate] = []
        if "contentBlockStart" in event:
            start = event["contentBlockStart"]
            use = (start.get("start") or {}).get("toolUse")
            if use:
                call = FunctionCallContent(call_id=use["toolUseId"], name=use["name"])
                self._blocks[int(start.get("contentBlockIndex", 0))] = _Block(call=call)
                out.append(
                    self._update(
                        UpdateKind.TOOL_CALL_STARTED, call_id=call.call_id, tool_name=call.name
                    )
                )
        elif "contentBlockDelta" in event:
            out.extend(self._delta(event["contentBlockDelta"]))
        elif "messageStop" in event:
            self._stopped = True
            reason = event["messageStop"].get("stopReason")
            self._finish = _FINISH.get(str(reason), FinishReason.OTHER)
        elif "metadata" in event:
            self._usage = usage_from(event["metadata"].get("usage")) or self._usage
        return out

    def _delta(self, data: dict[str, Any]) -> list[AgentResponseUpdate]:
        delta = data.get("delta") or {}
        index = int(data.get("contentBlockIndex", 0))
        if "text" in delta:
            return [self._update(UpdateKind.TEXT_DELTA, text=delta["text"])]
        if "toolUse" in delta:
            block = self._blocks.get(index)
            if block is None or block.call is None:
                return []
            piece = str(delta["toolUse"].get("input") or "")
            block.parts.append(piece)
            return [
                self._update(
                    UpdateKind.TOOL_CALL_ARGUMENTS_DELTA,
                    arguments_delta=piece,
                    call_id=block.call.call_id,
                    tool_name=block.call.name,
                )
            ]
        reasoning = delta.get("reasoningContent")
        if reasoning:
            if reasoning.get("text"):
                return [self._update(UpdateKind.REASONING_DELTA, reasoning=reasoning["text"])]
            if reasoning.get("signature"):
                signed = ReasoningContent(text="", signature=reasoning["signature"])
                return [self._update(UpdateKind.REASONING_DELTA, content=signed)]
        return []

    @property
    def finished(self) -> bool:
        return self._stopped

    def finish(self) -> list[AgentResponseUpdate]:
        out: list[AgentResponseUpdate] = []
        for index in sorted(self._blocks):
            call = self._blocks[index].call
            if call is None:
                continue
            arguments, raw = parse_arguments("".join(self._blocks[index].parts))
            call.arguments, call.raw_arguments = arguments, raw
            out.append(
                self._update(
                    UpdateKind.TOOL_CALL_ENDED,
                    content=call,
                    call_id=call.call_id,
                    tool_name=call.name,
                )
            )
        self._blocks.clear()
        if self._usage is not None:
            out.append(self._update(UpdateKind.USAGE, usage=self._usage))
        out.append(
            self._update(UpdateKind.FINISHED, finish_reason=self._finish or FinishReason.STOP)
        )
        return out


def _answer_events(data: dict[str, Any]) -> list[dict[str, Any]]:
    """A whole Converse answer as the stream events it stands for."""
    events: list[dict[str, Any]] = [{"messageStart": {"role": "assistant"}}]
    message = (data.get("output") or {}).get("message") or {}
    for index, block in enumerate(message.get("content") or ()):
        if "text" in block:
            events.append(
                {
                    "contentBlockDelta": {
                        "contentBlockIndex": index,
                        "delta": {"text": block["text"]},
                    }
                }
            )
        elif "toolUse" in block:
            use = block["toolUse"]
            start = {"toolUse": {"toolUseId": use["toolUseId"], "name": use["name"]}}
            events.append({"contentBlockStart": {"contentBlockIndex": index, "start": start}})
            piece = {"toolUse": {"input": json.dumps(use.get("input") or {})}}
            events.append({"contentBlockDelta": {"contentBlockIndex": index, "delta": piece}})
        elif "reasoningContent" in block:
            text = block["reasoningContent"].get("reasoningText") or {}
            for key in ("text", "signature"):
                if text.get(key):
                    delta = {"reasoningContent": {key: text[key]}}
                    events.append(
                        {"contentBlockDelta": {"contentBlockIndex": index, "delta": delta}}
                    )
    events.append({"messageStop": {"stopReason": data.get("stopReason")}})
    events.append({"metadata": {"usage": data.get("usage")}})
    return events


@dataclass(kw_only=True, slots=True)
class ConverseWire:
    """boto3 arguments of `converse` / `converse_stream` and their answers."""

    additional_fields: dict[str, Any] = field(default_factory=dict)
    """`additionalModelRequestFields`: the model's own settings (`top_k`, thinking, ...)."""

    def request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        system, converse = to_converse(messages)
        body: dict[str, Any] = {"modelId": model, "messages": converse}
        if system:
            body["system"] = system
        inference: dict[str, Any] = {}
        for name, wire_name in (
            ("max_tokens", "maxTokens"),
            ("temperature", "temperature"),
            ("top_p", "topP"),
            ("stop", "stopSequences"),
        ):
            value = getattr(options, name)
            if value is not None:
                inference[wire_name] = value
        if inference:
            body["inferenceConfig"] = inference
        choice = tool_choice(options.tool_choice)
        if options.tools and choice is not None:
            refuse_hosted(options.tools, "Bedrock's Converse API")
            specs = [
                {
                    "toolSpec": {
                        "name": t.name,
                        "description": t.description or t.name,
                        "inputSchema": {"json": t.parameters},
                    }
                }
                for t in options.tools
            ]
            body["toolConfig"] = {"tools": specs, "toolChoice": choice}
        if options.output_schema is not None:
            schema = {
                "schema": json.dumps(strict_json_schema(options.output_schema)),
                "name": options.output_schema.name,
            }
            if options.output_schema.description:
                schema["description"] = options.output_schema.description
            body["outputConfig"] = {
                "textFormat": {"type": "json_schema", "structure": {"jsonSchema": schema}}
            }
        if self.additional_fields:
            body["additionalModelRequestFields"] = dict(self.additional_fields)
        body.update(options.additional)
        return body

    def check_output_schema(self, output: OutputSchema) -> None:
        strict_json_schema(output)

    def assembler(self, message_id: str) -> ConverseAssembler:
        return ConverseAssembler(message_id)

    def parse(self, data: dict[str, Any], message_id: str) -> list[AgentResponseUpdate] | None:
        if "output" not in data:
            return None
        assembler = self.assembler(message_id)
        updates: list[AgentResponseUpdate] = []
        for event in _answer_events(data):
            updates += assembler.feed(event)
        kept = [
            u
            for u in updates
            if u.kind not in (UpdateKind.TOOL_CALL_STARTED, UpdateKind.TOOL_CALL_ARGUMENTS_DELTA)
        ]
        return kept + assembler.finish()
