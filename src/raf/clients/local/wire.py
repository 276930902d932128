"""The request shape of the embedded llama.cpp: chat completions, three ways.

`native`: the chat template formats tools itself (the chat-completions body);
`text`: a template without tool support and no tools offered (calls shown as text);
`grammar`: tools offered to a template without tool support (decoding constrained to
a call or an answer, see `local.tools`).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from raf.clients.errors import BadRequestError
from raf.clients.local.repeats import RepeatGuard
from raf.clients.local.tools import GrammarAssembler, text_messages, tool_schema
from raf.clients.media import MediaError
from raf.clients.openai.wire import (
    ChunkAssembler,
    completion_to_updates,
    to_openai_messages,
    to_openai_tool_choice,
    to_openai_tools,
)
from raf.clients.wire import StreamAssembler
from raf.core.contents import DataContent, FunctionResultContent, has_media
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.output import OutputSchema
from raf.core.responses import AgentResponseUpdate


@dataclass(kw_only=True, slots=True)
class LocalWire:
    """Request bodies for llama.cpp's in-process chat completions, and its answers."""

    max_tokens: int
    """Sent when the options set none."""
    temperature: float | None = None
    """Used when the options set none."""
    seed: int | None = None
    """Used when the options set none."""
    native: bool = False
    """Whether the model's chat template formats tool calls itself."""
    grammar: bool = False
    """Whether this call constrains decoding to a tool call or an answer."""
    stop_repeats: bool = True
    """Whether an answer that writes the same passage again and again is stopped."""

    def wants_grammar(self, options: ChatOptions) -> bool:
        """Whether a call with these options needs the grammar: tools offered and no native
        format, or tools and an output schema (one grammar holds both)."""
        offered = bool(options.tools) and options.tool_choice != "none"
        return offered and (not self.native or options.output_schema is not None)

    def request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {"max_tokens": options.max_tokens or self.max_tokens}
        if self.grammar:
            body["messages"] = text_messages(messages, options.tools)
            choice = options.tool_choice if isinstance(options.tool_choice, str) else None
            names = [t.name for t in options.tools]
            if choice not in (None, "auto", "required", *names):
                raise BadRequestError(
                    f"tool_choice {choice!r} names no tool offered to the local model "
                    f"(offered: {', '.join(names)}); name one of them, or use 'auto'",
                    provider="local",
                    model=model,
                )
            output = options.output_schema
            body["json_schema"] = tool_schema(
                options.tools, choice, output.json_schema if output is not None else None
            )
        elif not self.native:
            body["messages"] = text_messages(messages)
        else:
            body["messages"] = [
                {**m, "content": m.get("content") or ""} for m in to_openai_messages(messages)
            ]
            if options.tools and options.tool_choice != "none":
                body["tools"] = to_openai_tools(options.tools)
                if options.tool_choice is not None:
                    body["tool_choice"] = to_openai_tool_choice(options.tool_choice)
        if options.output_schema is not None:
            _tell_the_schema(body["messages"], options.output_schema, grammar=self.grammar)
        temperature = options.temperature if options.temperature is not None else self.temperature
        if temperature is not None:
            body["temperature"] = temperature
        seed = options.seed if options.seed is not None else self.seed
        if seed is not None:
            body["seed"] = seed
        if options.top_p is not None:
            body["top_p"] = options.top_p
        if options.stop:
            body["stop"] = list(options.stop)
        if self.grammar:
            pass
        elif options.output_schema is not None:  # decoding constrained to the schema
            body["json_schema"] = options.output_schema.json_schema
        elif options.response_format is not None:
            body["response_format"] = options.response_format
        body.update(options.additional)
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def assembler(self, message_id: str) -> StreamAssembler:
        """The answer's chunks as updates, its text watched for a passage written again
        and again (the answer then ends after the first time, see `local.repeats`)."""
        inner = GrammarAssembler(message_id) if self.grammar else ChunkAssembler(message_id)
        return RepeatGuard(inner, constrained=self.grammar) if self.stop_repeats else inner

    def parse(self, data: dict[str, Any], message_id: str) -> list[AgentResponseUpdate] | None:
        if not self.grammar:
            return completion_to_updates(data, message_id)
        choice = (data.get("choices") or [{}])[0]
        constrained = GrammarAssembler(message_id)
        # the text fed is emitted as it is decoded, so it is kept, not only what finish adds
        updates = constrained.feed(
            {
                "choices": [
                    {
                        "delta": {"content": (choice.get("message") or {}).get("content")},
                        "finish_reason": choice.get("finish_reason"),
                    }
                ],
                "usage": data.get("usage"),
            }
        )
        return updates + constrained.finish()


def _tell_the_schema(
    messages: list[dict[str, Any]], output: OutputSchema, *, grammar: bool
) -> None:
    """Say in the system prompt what the answer's fields are: the grammar fixes the
    shape, but a small model needs the words to fill it well."""
    schema = json.dumps(output.json_schema, ensure_ascii=False)
    where = 'the "answer"' if grammar else "your answer"
    note = f"{output.description} Write {where} as JSON matching this JSON Schema: {schema}"
    if messages and messages[0].get("role") == "system":
        messages[0] = {**messages[0], "content": f"{messages[0]['content']}\n\n{note}"}
    else:
        messages.insert(0, {"role": "system", "content": note})


def refuse_media(messages: Sequence[ChatMessage], model: str) -> None:
    """The embedded model reads text only (raf loads no vision projector): data in the
    conversation is a clear error naming the model, before the model is even loaded."""
    for message in messages:
        for content in message.contents:
            media = isinstance(content, DataContent) or (
                isinstance(content, FunctionResultContent) and has_media(content.result)
            )
            if media:
                raise MediaError(
                    f"the local model {model!r} has no vision projector: it reads text only, "
                    "not images, audio or documents; send them to a model that takes them "
                    "(ollama-native:llava, openai:gpt-4o, gemini-native:gemini-2.5-flash, ...)"
                )
