"""Ollama's native chat format (`POST /api/chat`) as plain dicts: raf messages out,
updates back in; streamed answers are one JSON object per line."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raf.clients.errors import InvalidResponseError
from raf.clients.hosted_tools import refuse_hosted
from raf.clients.media import IMAGE_TYPES, MediaError, decode
from raf.core.contents import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    has_media,
)
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions
from raf.core.output import OutputSchema
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.usage import UsageDetails

_OPTIONS = {"temperature": "temperature", "top_p": "top_p", "seed": "seed", "stop": "stop"}
_FINISH = {"stop": FinishReason.STOP, "length": FinishReason.LENGTH}


def _images(contents: Sequence[Any]) -> list[str]:
    out: list[str] = []
    for content in contents:
        if isinstance(content, DataContent):
            media = decode(content, IMAGE_TYPES, api="Ollama")
            if media.data is None:
                raise MediaError(
                    f"Ollama takes images as bytes, not links ({media.url!r}); read it with "
                    "raf.clients.media.attachment"
                )
            out.append(media.base64)
    return out


def to_ollama_messages(messages: Sequence[ChatMessage]) -> list[dict[str, Any]]:
    """raf messages as Ollama messages (images as base64 beside the text)."""
    names: dict[str, str] = {}
    out: list[dict[str, Any]] = []
    for message in messages:
        if message.role is Role.SYSTEM:
            out.append({"role": "system", "content": message.text})
        elif message.role is Role.ASSISTANT:
            calls = []
            for c in message.contents:
                if isinstance(c, FunctionCallContent):
                    names[c.call_id] = c.name
                    calls.append({"function": {"name": c.name, "arguments": c.arguments}})
            thinking = "".join(c.text for c in message.contents if isinstance(c, ReasoningContent))
            entry: dict[str, Any] = {"role": "assistant", "content": message.text}
            if thinking:
                entry["thinking"] = thinking
            if calls:
                entry["tool_calls"] = calls
            out.append(entry)
        else:
            text: list[str] = []
            returned: list[Any] = []
            for content in message.contents:
                if isinstance(content, FunctionResultContent):
                    result: dict[str, Any] = {"role": "tool", "content": content.as_text()}
                    name = content.name or names.get(content.call_id)
                    if name:
                        result["tool_name"] = name
                    out.append(result)
                    if content.error is None and has_media(content.result):
                        items = (
                            content.result if isinstance(content.result, list) else [content.result]
                        )
                        returned.extend(items)
                elif isinstance(content, TextContent):
                    text.append(content.text)
            if returned:  # a tool message holds no images: they follow as the user's
                label = "(images returned by the tool)"
                out.append({"role": "user", "content": label, "images": _images(returned)})
            images = _images(message.contents)
            if text or images:
                user: dict[str, Any] = {"role": "user", "content": "".join(text)}
                if images:
                    user["images"] = images
                out.append(user)
    return out


def usage_from(data: dict[str, Any]) -> UsageDetails | None:
    given, made = data.get("prompt_eval_count"), data.get("eval_count")
    if given is None and made is None:
        return None
    return UsageDetails(
        input_tokens=int(given or 0),
        output_tokens=int(made or 0),
        total_tokens=int(given or 0) + int(made or 0),
    )


@dataclass(slots=True)
class OllamaAssembler:
    """Turns `/api/chat` lines (dicts) into raf updates under one message id."""

    message_id: str
    events: int = 0
    response_id: str | None = None
    model_id: str | None = None
    _calls: list[FunctionCallContent] = field(default_factory=list)
    _done: dict[str, Any] | None = None

    def _update(self, kind: UpdateKind, **kwargs: Any) -> AgentResponseUpdate:
        return AgentResponseUpdate(kind=kind, message_id=self.message_id, **kwargs)

    def feed(self, line: dict[str, Any]) -> list[AgentResponseUpdate]:
        self.events += 1
        if "error" in line:  # a failure after the stream began is a line of its own
            raise InvalidResponseError(
                f"ollama reported an error: {line['error']}", provider="ollama", retryable=False
            )
        self.model_id = self.model_id or line.get("model")
        message = line.get("message") or {}
        out: list[AgentResponseUpdate] = []
        if message.get("thinking"):
            out.append(self._update(UpdateKind.REASONING_DELTA, reasoning=message["thinking"]))
        if message.get("content"):
            out.append(self._update(UpdateKind.TEXT_DELTA, text=message["content"]))
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments")
            raw = None
            if isinstance(arguments, str):  # some models' templates give a JSON string
                raw = arguments
                try:
                    arguments = json.loads(arguments)
                except ValueError:
                    arguments = {}
            content = FunctionCallContent(
                call_id=str(call.get("id") or f"call_{self.message_id}_{len(self._calls)}"),
                name=str(function.get("name") or ""),
                arguments=arguments if isinstance(arguments, dict) else {},
                raw_arguments=raw if not isinstance(arguments, dict) else None,
            )
            self._calls.append(content)
            out.append(
                self._update(
                    UpdateKind.TOOL_CALL_STARTED, call_id=content.call_id, tool_name=content.name
                )
            )
        if line.get("done"):
            self._done = line
        return out

    @property
    def finished(self) -> bool:
        return self._done is not None

    def finish(self) -> list[AgentResponseUpdate]:
        out = [
            self._update(UpdateKind.TOOL_CALL_ENDED, content=c, call_id=c.call_id, tool_name=c.name)
            for c in self._calls
        ]
        done = self._done or {}
        usage = usage_from(done)
        if usage is not None:
            out.append(self._update(UpdateKind.USAGE, usage=usage))
        reason = _FINISH.get(str(done.get("done_reason") or "stop"), FinishReason.OTHER)
        if self._calls and reason is FinishReason.STOP:
            reason = FinishReason.TOOL_CALLS
        out.append(self._update(UpdateKind.FINISHED, finish_reason=reason))
        return out


@dataclass(kw_only=True, slots=True)
class OllamaWire:
    """Request bodies and answers of `POST /api/chat`."""

    keep_alive: str | int | None = None
    """How long Ollama keeps the model loaded after the request (`"5m"`, `0`, `-1`)."""
    num_ctx: int | None = None
    """The context window Ollama loads the model with (its default is small)."""
    format: str | dict[str, Any] | None = None
    """`"json"`, or a JSON Schema the answer must match (an output type sets it too)."""
    think: bool | None = None
    """Ask thinking models to think (their reasoning streams as reasoning)."""
    options: dict[str, Any] = field(default_factory=dict)
    """Other model options Ollama documents (`num_gpu`, `repeat_penalty`, ...)."""

    def request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": model,
            "messages": to_ollama_messages(messages),
            "stream": stream,
        }
        if options.tools and options.tool_choice != "none":
            refuse_hosted(options.tools, "Ollama")
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.parameters,
                    },
                }
                for t in options.tools
            ]
        model_options: dict[str, Any] = dict(self.options)
        for name, wire_name in _OPTIONS.items():
            value = getattr(options, name)
            if value is not None:
                model_options[wire_name] = value
        if options.max_tokens is not None:
            model_options["num_predict"] = options.max_tokens
        if self.num_ctx is not None:
            model_options["num_ctx"] = self.num_ctx
        if model_options:
            body["options"] = model_options
        if self.keep_alive is not None:
            body["keep_alive"] = self.keep_alive
        if self.think is not None:
            body["think"] = self.think
        if options.output_schema is not None:
            body["format"] = options.output_schema.json_schema
        elif self.format is not None:
            body["format"] = self.format
        body.update(options.additional)
        return body

    def check_output_schema(self, output: OutputSchema) -> None:
        """Ollama takes any JSON Schema as `format`: nothing to refuse."""

    def assembler(self, message_id: str) -> OllamaAssembler:
        return OllamaAssembler(message_id)

    def parse(self, data: dict[str, Any], message_id: str) -> list[AgentResponseUpdate] | None:
        if "message" not in data or "done" not in data:
            return None
        assembler = self.assembler(message_id)
        return assembler.feed(data) + assembler.finish()
