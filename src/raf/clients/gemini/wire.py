"""Google Gemini's native `generateContent` format, as the `google-genai` SDK takes it
(snake_case dicts) and gives it back (`model_dump(mode="json")`).

Thought signatures: Gemini signs the parts it writes after thinking (a function call,
usually) and wants each signature back on the same part. raf keeps one as the
`signature` of the `ReasoningContent` just before the content it belongs to (the thought
summary's, when thoughts are included), and puts it back on the next part when the
history is sent again; thought text itself is not sent back.

Grounding with Google Search: with `google_search` on, the request offers Gemini's
`google_search` tool, which Gemini runs itself. The grounding metadata of the answer
(the queries searched, the web sources, which part of the text each supports, and the
search suggestions Google asks apps to show) streams as a `google_search` call
(`TOOL_CALLING`, then `TOOL_CALLED` holding the metadata as Gemini gave it) before the
answer ends; it folds into the answer's message and is never sent back.
"""

from __future__ import annotations

import base64
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raf.clients.hosted_tools import refuse_hosted
from raf.clients.media import AUDIO_TYPES, DOCUMENT_TYPES, IMAGE_TYPES, decode
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

GEMINI_TYPES = (*IMAGE_TYPES, *DOCUMENT_TYPES, *AUDIO_TYPES)
GROUNDING_TOOL = "google_search"
"""The name Gemini's Google Search grounding streams under, as a hosted call."""
_FINISH = {
    "STOP": FinishReason.STOP,
    "MAX_TOKENS": FinishReason.LENGTH,
    "SAFETY": FinishReason.CONTENT_FILTER,
    "RECITATION": FinishReason.CONTENT_FILTER,
    "BLOCKLIST": FinishReason.CONTENT_FILTER,
    "PROHIBITED_CONTENT": FinishReason.CONTENT_FILTER,
    "SPII": FinishReason.CONTENT_FILTER,
    "IMAGE_SAFETY": FinishReason.CONTENT_FILTER,
}


def media_part(content: DataContent) -> dict[str, Any]:
    """Bytes as `inline_data`, a link as `file_data` (a Files API or Cloud Storage URI)."""
    media = decode(content, GEMINI_TYPES, api="Gemini")
    if media.data is not None:
        return {"inline_data": {"mime_type": media.media_type, "data": media.data}}
    return {"file_data": {"file_uri": media.url, "mime_type": media.media_type}}


def _result(content: FunctionResultContent) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A function response and the media parts a tool returned with it."""
    results = content.result if isinstance(content.result, list) else [content.result]
    media = [media_part(r) for r in results if isinstance(r, DataContent)]
    if content.error is not None:
        response: dict[str, Any] = {"error": content.error}
    elif media:
        rest = [r for r in results if not isinstance(r, DataContent)]
        text = FunctionResultContent(call_id="", result=rest or None).as_text()
        response = {"result": text or f"{len(media)} attachment(s) follow"}
    else:
        response = {"result": content.as_text()}
    part = {
        "function_response": {
            "id": content.call_id,
            "name": content.name or "",
            "response": response,
        }
    }
    return part, media


def to_contents(messages: Sequence[ChatMessage]) -> tuple[str | None, list[dict[str, Any]]]:
    """The system instruction and Gemini contents (roles `user` and `model`)."""
    system: list[str] = []
    contents: list[dict[str, Any]] = []
    names: dict[str, str] = {}
    for message in messages:
        if message.role is Role.SYSTEM:
            system.append(message.text)
            continue
        role = "model" if message.role is Role.ASSISTANT else "user"
        parts: list[dict[str, Any]] = []
        trailing: list[dict[str, Any]] = []
        signature: str | None = None
        for content in message.contents:
            part: dict[str, Any] | None = None
            if isinstance(content, ReasoningContent):
                # thought text is not sent back; its signature goes on the next part
                if role == "model" and content.signature:
                    signature = content.signature
                continue
            if isinstance(content, TextContent):
                if content.text:
                    part = {"text": content.text}
            elif isinstance(content, DataContent):
                part = media_part(content)
            elif isinstance(content, FunctionCallContent):
                names[content.call_id] = content.name
                part = {
                    "function_call": {
                        "id": content.call_id,
                        "name": content.name,
                        "args": content.arguments,
                    }
                }
            elif isinstance(content, FunctionResultContent) and role == "user":
                if content.name is None and content.call_id in names:
                    content = FunctionResultContent(
                        call_id=content.call_id,
                        result=content.result,
                        error=content.error,
                        name=names[content.call_id],
                    )
                part, media = _result(content)
                trailing.extend(media)
            if part is None:
                continue
            if signature is not None:  # the SDK wants the signature's bytes
                part["thought_signature"] = base64.b64decode(signature)
                signature = None
            parts.append(part)
        parts.extend(trailing)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return ("\n\n".join(system) if system else None), contents


def _tool_config(choice: ToolChoice | None) -> dict[str, Any] | None:
    if choice is None or choice == "auto":
        return None
    if choice == "required":
        return {"function_calling_config": {"mode": "ANY"}}
    if choice == "none":
        return {"function_calling_config": {"mode": "NONE"}}
    return {"function_calling_config": {"mode": "ANY", "allowed_function_names": [choice]}}


def usage_from(data: dict[str, Any] | None) -> UsageDetails | None:
    if not data:
        return None
    given = int(data.get("prompt_token_count") or 0)
    made = int(data.get("candidates_token_count") or 0)
    thought = int(data.get("thoughts_token_count") or 0)
    return UsageDetails(
        input_tokens=given,
        output_tokens=made + thought,
        total_tokens=int(data.get("total_token_count") or given + made + thought),
        cache_read_tokens=int(data.get("cached_content_token_count") or 0),
        reasoning_tokens=thought,
    )


@dataclass(slots=True)
class GeminiAssembler:
    """Turns `GenerateContentResponse` chunks (dicts) into raf updates."""

    message_id: str
    events: int = 0
    response_id: str | None = None
    model_id: str | None = None
    _calls: list[FunctionCallContent] = field(default_factory=list)
    _finish: FinishReason | None = None
    _usage: UsageDetails | None = None
    _grounding: dict[str, Any] | None = None

    def _update(self, kind: UpdateKind, **kwargs: Any) -> AgentResponseUpdate:
        return AgentResponseUpdate(kind=kind, message_id=self.message_id, **kwargs)

    def feed(self, chunk: dict[str, Any]) -> list[AgentResponseUpdate]:
        self.events += 1
        self.response_id = self.response_id or chunk.get("response_id")
        self.model_id = self.model_id or chunk.get("model_version")
        self._usage = usage_from(chunk.get("usage_metadata")) or self._usage
        blocked = (chunk.get("prompt_feedback") or {}).get("block_reason")
        if blocked:
            self._finish = FinishReason.CONTENT_FILTER
        out: list[AgentResponseUpdate] = []
        for candidate in (chunk.get("candidates") or ())[:1]:
            for part in (candidate.get("content") or {}).get("parts") or ():
                out.extend(self._part(part))
            grounding = candidate.get("grounding_metadata")
            if grounding:  # the last chunk that carries it has all of it
                self._grounding = grounding
            reason = candidate.get("finish_reason")
            if reason:
                self._finish = _FINISH.get(str(reason), FinishReason.OTHER)
        return out

    def _part(self, part: dict[str, Any]) -> list[AgentResponseUpdate]:
        out: list[AgentResponseUpdate] = []
        signature = part.get("thought_signature")
        if signature and not part.get("thought"):
            signed = ReasoningContent(text="", signature=str(signature))
            out.append(self._update(UpdateKind.REASONING_DELTA, content=signed))
        if part.get("thought") and part.get("text"):
            out.append(self._update(UpdateKind.REASONING_DELTA, reasoning=part["text"]))
        elif part.get("text"):
            out.append(self._update(UpdateKind.TEXT_DELTA, text=part["text"]))
        call = part.get("function_call")
        if call:
            content = FunctionCallContent(
                call_id=str(call.get("id") or f"call_{self.message_id}_{len(self._calls)}"),
                name=str(call.get("name") or ""),
                arguments=dict(call.get("args") or {}),
            )
            self._calls.append(content)
            out.append(
                self._update(
                    UpdateKind.TOOL_CALL_ENDED,
                    content=content,
                    call_id=content.call_id,
                    tool_name=content.name,
                )
            )
        return out

    @property
    def finished(self) -> bool:
        return self._finish is not None

    def _grounded(self) -> list[AgentResponseUpdate]:
        """The Google Search Gemini ran, as a hosted call and its result."""
        if self._grounding is None:
            return []
        call_id = f"{GROUNDING_TOOL}_{self.response_id or self.message_id}"
        result = FunctionResultContent(
            call_id=call_id, name=GROUNDING_TOOL, result=dict(self._grounding)
        )
        named = {"call_id": call_id, "tool_name": GROUNDING_TOOL}
        return [
            self._update(UpdateKind.TOOL_CALLING, **named),
            self._update(UpdateKind.TOOL_CALLED, content=result, **named),
        ]

    def finish(self) -> list[AgentResponseUpdate]:
        out: list[AgentResponseUpdate] = self._grounded()
        if self._usage is not None:
            out.append(self._update(UpdateKind.USAGE, usage=self._usage))
        reason = self._finish or FinishReason.STOP
        if self._calls and reason is FinishReason.STOP:
            reason = FinishReason.TOOL_CALLS
        out.append(self._update(UpdateKind.FINISHED, finish_reason=reason))
        return out


@dataclass(kw_only=True, slots=True)
class GeminiWire:
    """`generate_content` arguments: `model`, `contents` and `config`."""

    thinking_budget: int | None = None
    """Tokens the model may think with (0 turns thinking off where the model allows)."""
    include_thoughts: bool = False
    """Stream the model's thought summaries as reasoning."""
    safety_settings: list[dict[str, str]] = field(default_factory=list)
    """`{"category": "HARM_CATEGORY_...", "threshold": "BLOCK_..."}` for each category."""
    google_search: bool = False
    """Offer Gemini's own Google Search tool (grounding); its metadata comes back as a
    `google_search` call's result."""

    def request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        system, contents = to_contents(messages)
        config: dict[str, Any] = {"automatic_function_calling": {"disable": True}}
        if system is not None:
            config["system_instruction"] = system
        for name, wire_name in (
            ("temperature", "temperature"),
            ("top_p", "top_p"),
            ("max_tokens", "max_output_tokens"),
            ("stop", "stop_sequences"),
            ("seed", "seed"),
        ):
            value = getattr(options, name)
            if value is not None:
                config[wire_name] = value
        tools: list[dict[str, Any]] = []
        if options.tools and options.tool_choice != "none":
            refuse_hosted(options.tools, "Gemini")
            tools.append(
                {
                    "function_declarations": [
                        {
                            "name": t.name,
                            "description": t.description,
                            "parameters_json_schema": t.parameters,
                        }
                        for t in options.tools
                    ]
                }
            )
            tool_config = _tool_config(options.tool_choice)
            if tool_config is not None:
                config["tool_config"] = tool_config
        if self.google_search:
            tools.append({"google_search": {}})
        if tools:
            config["tools"] = tools
        if options.output_schema is not None:
            config["response_mime_type"] = "application/json"
            config["response_json_schema"] = options.output_schema.json_schema
        if self.thinking_budget is not None or self.include_thoughts:
            thinking: dict[str, Any] = {"include_thoughts": self.include_thoughts}
            if self.thinking_budget is not None:
                thinking["thinking_budget"] = self.thinking_budget
            config["thinking_config"] = thinking
        if self.safety_settings:
            config["safety_settings"] = [dict(s) for s in self.safety_settings]
        config.update(options.additional)
        return {"model": model, "contents": contents, "config": config}

    def check_output_schema(self, output: OutputSchema) -> None:
        """Gemini takes a JSON Schema as it is: nothing to refuse."""

    def assembler(self, message_id: str) -> GeminiAssembler:
        return GeminiAssembler(message_id)

    def parse(self, data: dict[str, Any], message_id: str) -> list[AgentResponseUpdate] | None:
        if "candidates" not in data and "prompt_feedback" not in data:
            return None
        assembler = self.assembler(message_id)
        return assembler.feed(data) + assembler.finish()
