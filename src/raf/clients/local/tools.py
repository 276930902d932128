"""Tool calls for local models whose chat template has none: a JSON-Schema grammar, the
prompt that explains it, the history rendered as text, and the answer parsed back.

Decoding is constrained so every answer is `{"tool": <name>, "arguments": {...}}` for
one of the tools or `{"answer": "<text>"}`; the text of an answer streams as it is
decoded, a call is emitted once it is whole.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Sequence
from typing import Any

from raf.core.contents import FunctionCallContent, FunctionResultContent, TextContent
from raf.core.messages import ChatMessage, Role, new_id
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.tools import Tool
from raf.core.usage import UsageDetails

_DEF_KEYS = ("$defs", "definitions")


def _rewrite_refs(value: Any, renames: dict[str, str]) -> Any:
    """`value` with every local `$ref` in `renames` pointed at its new name."""
    if isinstance(value, dict):
        out = {key: _rewrite_refs(item, renames) for key, item in value.items()}
        ref = out.get("$ref")
        if isinstance(ref, str) and ref in renames:
            out["$ref"] = renames[ref]
        return out
    if isinstance(value, list):
        return [_rewrite_refs(item, renames) for item in value]
    return value


def hoist_definitions(
    index: int, parameters: dict[str, Any], into: dict[str, Any]
) -> dict[str, Any]:
    """A tool's schema with its `$defs` moved to the root (`into`), renamed per tool.

    Nested under `anyOf/.../arguments`, a tool's `#/$defs/X` would point at the root of
    the combined schema, where there is none (pydantic writes such refs for nested models).
    """
    renames: dict[str, str] = {}
    for key in _DEF_KEYS:
        for name in parameters.get(key) or {}:
            renames[f"#/{key}/{name}"] = f"#/$defs/t{index}_{name}"
    if not renames:
        return parameters
    body = {k: v for k, v in parameters.items() if k not in _DEF_KEYS}
    for key in _DEF_KEYS:
        for name, definition in (parameters.get(key) or {}).items():
            into[f"t{index}_{name}"] = _rewrite_refs(definition, renames)
    return _rewrite_refs(body, renames)  # type: ignore[no-any-return]


def tool_schema(
    tools: Sequence[Tool], choice: str | None, answer: dict[str, Any] | None = None
) -> dict[str, Any]:
    """JSON Schema of one constrained answer: a call of one of the tools, or an answer
    (text, or the JSON of `answer` when the answer has an output schema)."""
    chosen = [t for t in tools if choice in (None, "auto", "required") or t.name == choice]
    definitions: dict[str, Any] = {}
    branches: list[dict[str, Any]] = [
        {
            "type": "object",
            "properties": {
                "tool": {"const": t.name},
                "arguments": hoist_definitions(i, dict(t.parameters), definitions)
                if t.parameters
                else {"type": "object"},
            },
            "required": ["tool", "arguments"],
            "additionalProperties": False,
        }
        for i, t in enumerate(chosen)
    ]
    if choice in (None, "auto"):
        answer_schema = (
            {"type": "string"}
            if answer is None
            else hoist_definitions(len(chosen), answer, definitions)
        )
        branches.append(
            {
                "type": "object",
                "properties": {"answer": answer_schema},
                "required": ["answer"],
                "additionalProperties": False,
            }
        )
    schema: dict[str, Any] = {"anyOf": branches}
    if definitions:
        schema["$defs"] = definitions
    return schema


def tool_instructions(tools: Sequence[Tool]) -> str:
    lines = ["You can call these tools:"]
    for t in tools:
        arguments = json.dumps(t.parameters.get("properties", {}), ensure_ascii=False)
        lines.append(f"- {t.name}: {t.description} Arguments: {arguments}")
    lines.append(
        'To call a tool, reply {"tool": "<name>", "arguments": {...}}. '
        'To answer the user, reply {"answer": "<text>"}. '
        "When a tool result is there, use it to answer."
    )
    return "\n".join(lines)


def text_messages(
    messages: Sequence[ChatMessage], tools: Sequence[Tool] = ()
) -> list[dict[str, Any]]:
    """Messages for a template without tool support: calls and results become plain text.

    With tools offered, earlier answers are shown in the constrained JSON form as well, so
    the model sees the format it must write.
    """
    out: list[dict[str, Any]] = []
    system = [m.text for m in messages if m.role is Role.SYSTEM and m.text]
    if tools:
        system.append(tool_instructions(tools))
    if system:
        out.append({"role": "system", "content": "\n\n".join(system)})
    names: dict[str, str] = {}
    for message in messages:
        if message.role is Role.SYSTEM:
            continue
        if message.role is Role.ASSISTANT:
            parts = []
            for content in message.contents:
                if isinstance(content, FunctionCallContent):
                    names[content.call_id] = content.name
                    if tools:  # without tools a call shown would be copied, not answered
                        call = {"tool": content.name, "arguments": content.arguments}
                        parts.append(json.dumps(call, ensure_ascii=False))
                elif isinstance(content, TextContent) and content.text:
                    parts.append(
                        json.dumps({"answer": content.text}, ensure_ascii=False)
                        if tools
                        else content.text
                    )
            if parts:
                out.append({"role": "assistant", "content": "\n".join(parts)})
            continue
        parts = []
        for content in message.contents:
            if isinstance(content, FunctionResultContent):
                name = content.name or names.get(content.call_id, "the tool")
                parts.append(f"Result of {name}: {content.as_text()}")
            elif isinstance(content, TextContent) and content.text:
                parts.append(content.text)
        if parts:
            if out and out[-1]["role"] == "user":
                out[-1]["content"] += "\n" + "\n".join(parts)
            else:
                out.append({"role": "user", "content": "\n".join(parts)})
    return out


_ANSWER_PREFIX = re.compile(r'^\s*\{\s*"answer"\s*:\s*"')
_TOOL_PREFIX = re.compile(r'^\s*\{\s*"tool"')


def parse_constrained(text: str) -> tuple[list[Any], FinishReason]:
    """Contents from a constrained answer; a cut-off answer keeps the text it has, a
    cut-off call (or answer in JSON) is lost whole: its JSON is no answer to show."""
    try:
        value = json.loads(text)
    except ValueError:
        match = _ANSWER_PREFIX.match(text)
        if match is None and text.lstrip().startswith("{"):
            return [], FinishReason.LENGTH
        salvaged = text[match.end() :] if match else text
        with contextlib.suppress(ValueError):
            salvaged = json.loads(f'"{salvaged.rstrip(chr(92))}"')
        return ([TextContent(text=salvaged)] if salvaged else []), FinishReason.LENGTH
    if isinstance(value, dict) and isinstance(value.get("tool"), str):
        arguments = value.get("arguments")
        call = FunctionCallContent(
            call_id=new_id("call"),
            name=value["tool"],
            arguments=arguments if isinstance(arguments, dict) else {},
        )
        return [call], FinishReason.TOOL_CALLS
    if isinstance(value, dict) and "answer" in value:
        answer = value["answer"]
        text = answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
        return [TextContent(text=text)], FinishReason.STOP
    return [TextContent(text=text)], FinishReason.STOP


_ESCAPES = {'"': '"', "\\": "\\", "/": "/", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t"}


def decode_partial(text: str, start: int) -> tuple[str, int, bool]:
    """Decode a JSON string body from `start` as far as it is complete.

    Returns the decoded text, where decoding stopped, and whether the closing quote was
    reached; an escape cut in the middle waits for the next piece.
    """
    out: list[str] = []
    i = start
    while i < len(text):
        char = text[i]
        if char == '"':
            return "".join(out), i + 1, True
        if char != "\\":
            out.append(char)
            i += 1
            continue
        if i + 1 >= len(text):
            break
        kind = text[i + 1]
        if kind != "u":
            out.append(_ESCAPES.get(kind, kind))
            i += 2
            continue
        if i + 6 > len(text):
            break
        code = int(text[i + 2 : i + 6], 16)
        if 0xD800 <= code < 0xDC00:  # a surrogate pair needs its second half
            if i + 12 > len(text):
                break
            low = int(text[i + 8 : i + 12], 16)
            out.append(chr(0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00)))
            i += 12
            continue
        out.append(chr(code))
        i += 6
    return "".join(out), i, False


class ConstrainedStream:
    """Turns the pieces of a constrained answer into updates under one message id."""

    def __init__(self, message_id: str) -> None:
        self.message_id = message_id
        self.buffer = ""
        self.emitted = ""
        self._mode: str | None = None
        self._pos = 0

    def _text(self, text: str) -> AgentResponseUpdate:
        self.emitted += text
        return AgentResponseUpdate(
            kind=UpdateKind.TEXT_DELTA, message_id=self.message_id, text=text
        )

    def feed(self, piece: str) -> list[AgentResponseUpdate]:
        self.buffer += piece
        if self._mode is None:
            match = _ANSWER_PREFIX.match(self.buffer)
            if match:
                self._mode, self._pos = "answer", match.end()
            elif _TOOL_PREFIX.match(self.buffer):
                self._mode = "tool"
        if self._mode != "answer":
            return []
        text, self._pos, closed = decode_partial(self.buffer, self._pos)
        if closed:
            self._mode = "closed"
        return [self._text(text)] if text else []

    def finish(
        self, finish_reason: str | None, usage: dict[str, Any] | None
    ) -> list[AgentResponseUpdate]:
        """The call (if any), the rest of the text, usage and the finish reason."""
        contents, reason = parse_constrained(self.buffer)
        if finish_reason == "length":
            reason = FinishReason.LENGTH
        out: list[AgentResponseUpdate] = []
        for content in contents:
            if isinstance(content, FunctionCallContent):
                out.extend(_call_progress(content, self.message_id))
            elif isinstance(content, TextContent) and content.text.startswith(self.emitted):
                rest = content.text[len(self.emitted) :]
                if rest:
                    out.append(self._text(rest))
        found = usage_of(usage)
        if found is not None:
            out.append(
                AgentResponseUpdate(kind=UpdateKind.USAGE, message_id=self.message_id, usage=found)
            )
        out.append(
            AgentResponseUpdate(
                kind=UpdateKind.FINISHED, message_id=self.message_id, finish_reason=reason
            )
        )
        return out


def usage_of(usage: dict[str, Any] | None) -> UsageDetails | None:
    """llama.cpp's usage object as raf's (None: it sent none)."""
    if not usage:
        return None
    return UsageDetails(
        input_tokens=int(usage.get("prompt_tokens") or 0),
        output_tokens=int(usage.get("completion_tokens") or 0),
        total_tokens=int(usage.get("total_tokens") or 0),
    )


def _call_progress(call: FunctionCallContent, message_id: str) -> list[AgentResponseUpdate]:
    """A whole call as the updates a stream gives: started, its arguments, ended."""
    raw = json.dumps(call.arguments, ensure_ascii=False)
    return [
        AgentResponseUpdate(
            kind=kind,
            message_id=message_id,
            text=text,
            content=done,
            call_id=call.call_id,
            tool_name=call.name,
        )
        for kind, text, done in (
            (UpdateKind.TOOL_CALL_STARTED, "", None),
            (UpdateKind.TOOL_CALL_ARGUMENTS_DELTA, raw, None),
            (UpdateKind.TOOL_CALL_ENDED, "", call),
        )
    ]


def call_updates(
    call: FunctionCallContent, message_id: str, usage: UsageDetails | None
) -> list[AgentResponseUpdate]:
    """The updates of an answer that is one call: the call, usage, finish reason."""
    out = _call_progress(call, message_id)
    if usage is not None:
        out.append(AgentResponseUpdate(kind=UpdateKind.USAGE, message_id=message_id, usage=usage))
    out.append(
        AgentResponseUpdate(
            kind=UpdateKind.FINISHED, message_id=message_id, finish_reason=FinishReason.TOOL_CALLS
        )
    )
    return out


def text_updates(
    text: str, message_id: str, usage: UsageDetails | None
) -> list[AgentResponseUpdate]:
    """The updates of an answer that is one text known whole: the text, usage, finish."""
    out = [AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id=message_id, text=text)]
    if usage is not None:
        out.append(AgentResponseUpdate(kind=UpdateKind.USAGE, message_id=message_id, usage=usage))
    out.append(
        AgentResponseUpdate(
            kind=UpdateKind.FINISHED, message_id=message_id, finish_reason=FinishReason.STOP
        )
    )
    return out


class GrammarAssembler:
    """Chat-completion chunks of a constrained answer as updates (see `ConstrainedStream`)."""

    def __init__(self, message_id: str) -> None:
        self.events = 0
        self.response_id: str | None = None
        self.model_id: str | None = None
        self._stream = ConstrainedStream(message_id)
        self._finish: str | None = None
        self._usage: dict[str, Any] | None = None

    def feed(self, chunk: dict[str, Any]) -> list[AgentResponseUpdate]:
        self.events += 1
        self._usage = chunk.get("usage") or self._usage
        out: list[AgentResponseUpdate] = []
        for choice in chunk.get("choices") or ():
            self._finish = choice.get("finish_reason") or self._finish
            piece = (choice.get("delta") or {}).get("content")
            if piece:
                out.extend(self._stream.feed(piece))
        return out

    @property
    def finished(self) -> bool:
        """Whether a finish reason arrived (a stream without one was cut)."""
        return self._finish is not None

    def finish(self) -> list[AgentResponseUpdate]:
        return self._stream.finish(self._finish, self._usage)
