"""The OpenAI Responses wire format as plain dicts: raf messages out, updates back in.

The answer of one request is one response (`resp_...`); its id becomes the id of the
assistant message it folds into, so a later request can name it as
`previous_response_id` when the conversation is kept on the provider's side. Reasoning
comes back as items (`rs_...`, their summary as text, their encrypted form when asked
for) kept in `ReasoningContent` (`signature` holds the item id, `protected_data` the
encrypted reasoning) and sent back before the calls they led to. Hosted tools' calls
(web search, file search, code interpreter, remote MCP) stream as `TOOL_CALLING` when
they start and `TOOL_CALLED` with their result when they end. A remote MCP server's
`mcp_approval_request` comes in as a call of its hosted tool (`mcp_<server_label>`,
marked by `MCP_APPROVAL_KEY` in its arguments), so the run pauses for a person; its result
goes back as the `mcp_approval_response` item. The secrets of the request's hosted tools
(`for_options`) are taken out of hosted results; `OpenAIResponsesClient` takes them out
of its errors.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from raf.clients.errors import (
    ClientError,
    InvalidResponseError,
    RateLimitError,
    ServerError,
    redact,
)
from raf.clients.hosted_tools import MCP_APPROVAL_KEY, hosted_secrets, hosted_spec
from raf.clients.media import responses_part, result_parts
from raf.clients.strict_schema import strict_json_schema
from raf.clients.wire import parse_arguments
from raf.core.contents import (
    DataContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    has_media,
)
from raf.core.messages import ChatMessage, Role
from raf.core.options import ChatOptions, ToolChoice
from raf.core.output import OutputSchema
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.tools import Tool
from raf.core.usage import UsageDetails

REASONING_ID_PREFIX = "rs_"
"""Reasoning items' ids start so; reasoning from other providers is never sent here."""
RESPONSE_ID_PREFIX = "resp_"

HOSTED_CALLS = {
    "web_search_call": "web_search",
    "file_search_call": "file_search",
    "code_interpreter_call": "code_interpreter",
    "mcp_call": "mcp",
    "mcp_list_tools": "mcp",
    "image_generation_call": "image_generation",
}
"""Output items a hosted tool leaves, and the tool type that made them."""


def usage_from(data: dict[str, Any] | None) -> UsageDetails | None:
    """raf usage from a Responses `usage` object."""
    if not data:
        return None
    read = data.get("input_tokens_details") or {}
    written = data.get("output_tokens_details") or {}
    given = int(data.get("input_tokens") or 0)
    made = int(data.get("output_tokens") or 0)
    return UsageDetails(
        input_tokens=given,
        output_tokens=made,
        total_tokens=int(data.get("total_tokens") or given + made),
        cache_read_tokens=int(read.get("cached_tokens") or 0),
        reasoning_tokens=int(written.get("reasoning_tokens") or 0),
    )


def _scrub(value: Any, hidden: Sequence[str]) -> Any:
    """`value` with every secret in `hidden` masked in its strings."""
    if not hidden:
        return value
    if isinstance(value, str):
        return redact(value, hidden)
    if isinstance(value, dict):
        return {k: _scrub(v, hidden) for k, v in value.items()}
    if isinstance(value, list):
        return [_scrub(v, hidden) for v in value]
    return value


def mcp_approvals(messages: Sequence[ChatMessage]) -> dict[str, str]:
    """The approval request id of each call (by call id) that stands for a remote MCP
    server's approval request."""
    found: dict[str, str] = {}
    for message in messages:
        for call in message.function_calls:
            request_id = call.arguments.get(MCP_APPROVAL_KEY)
            if isinstance(request_id, str) and request_id:
                found[call.call_id] = request_id
    return found


def _approval_request_item(call: FunctionCallContent) -> dict[str, Any]:
    """An MCP approval request as the provider wrote it, to send back with the history."""
    arguments = call.arguments.get("arguments")
    return {
        "type": "mcp_approval_request",
        "id": call.arguments[MCP_APPROVAL_KEY],
        "server_label": str(call.arguments.get("server_label") or ""),
        "name": str(call.arguments.get("tool") or ""),
        "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments or {}),
    }


def _approval_response_item(result: FunctionResultContent, request_id: str) -> dict[str, Any]:
    """A person's answer to an MCP approval request: approved unless the call was denied."""
    item: dict[str, Any] = {
        "type": "mcp_approval_response",
        "approval_request_id": request_id,
        "approve": result.error is None,
    }
    if result.error is not None:
        item["reason"] = result.error
    return item


def _arguments_text(call: FunctionCallContent) -> str:
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(call.arguments, ensure_ascii=False)


def _reasoning_item(content: ReasoningContent) -> dict[str, Any] | None:
    """A reasoning item to send back; None for reasoning this API did not write."""
    if not (content.signature or "").startswith(REASONING_ID_PREFIX):
        return None
    item: dict[str, Any] = {
        "type": "reasoning",
        "id": content.signature,
        "summary": [{"type": "summary_text", "text": content.text}] if content.text else [],
    }
    if content.protected_data is not None:
        item["encrypted_content"] = content.protected_data
    return item


def _assistant_items(message: ChatMessage) -> list[dict[str, Any]]:
    """An answer as items in its order: text, reasoning and function calls (hosted tools'
    results stay behind: the provider's answer already read them)."""
    items: list[dict[str, Any]] = []
    text: list[str] = []
    for content in message.contents:
        if isinstance(content, TextContent):
            text.append(content.text)
            continue
        if isinstance(content, ReasoningContent):
            item = _reasoning_item(content)
        elif isinstance(content, FunctionCallContent) and MCP_APPROVAL_KEY in content.arguments:
            item = _approval_request_item(content)
        elif isinstance(content, FunctionCallContent):
            item = {
                "type": "function_call",
                "call_id": content.call_id,
                "name": content.name,
                "arguments": _arguments_text(content),
            }
        else:
            continue
        if item is not None:
            if text:
                items.append({"role": "assistant", "content": "".join(text)})
                text.clear()
            items.append(item)
    if text:
        items.append({"role": "assistant", "content": "".join(text)})
    return items


def to_input(
    messages: Sequence[ChatMessage], approvals: Mapping[str, str] | None = None
) -> tuple[str | None, list[dict[str, Any]]]:
    """raf messages as `instructions` (the system messages) and input items; `approvals`
    names the calls that stand for MCP approval requests (by default: those in
    `messages`)."""
    if approvals is None:
        approvals = mcp_approvals(messages)
    instructions: list[str] = []
    items: list[dict[str, Any]] = []
    for message in messages:
        role = message.role
        if role is Role.SYSTEM:
            instructions.append(message.text)
        elif role is Role.ASSISTANT:
            items.extend(_assistant_items(message))
        else:
            parts: list[dict[str, Any]] = []
            for content in message.contents:
                if isinstance(content, FunctionResultContent) and content.call_id in approvals:
                    items.append(_approval_response_item(content, approvals[content.call_id]))
                elif isinstance(content, FunctionResultContent):
                    output: Any = content.as_text()
                    if content.error is None and has_media(content.result):
                        output = result_parts(
                            content.result,
                            responses_part,
                            lambda t: {"type": "input_text", "text": t},
                        )
                    items.append(
                        {
                            "type": "function_call_output",
                            "call_id": content.call_id,
                            "output": output,
                        }
                    )
                elif isinstance(content, TextContent):
                    parts.append({"type": "input_text", "text": content.text})
                elif isinstance(content, DataContent):
                    parts.append(responses_part(content))
            if parts:
                items.append({"role": "user", "content": parts})
    return ("\n\n".join(instructions) if instructions else None), items


def to_tools(tools: Sequence[Tool]) -> list[dict[str, Any]]:
    """Function tools as Responses function tools; hosted tools as their own objects."""
    out: list[dict[str, Any]] = []
    for tool in tools:
        spec = hosted_spec(tool)
        if spec is not None:
            out.append(dict(spec))
            continue
        out.append(
            {
                "type": "function",
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            }
        )
    return out


def to_tool_choice(choice: ToolChoice | None) -> Any:
    """`auto`/`none`/`required` pass through; any other string names one function tool."""
    if choice is None or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def text_format(output: OutputSchema) -> dict[str, Any]:
    """The strict `json_schema` text format asking for `output`."""
    spec: dict[str, Any] = {
        "type": "json_schema",
        "name": output.name,
        "schema": strict_json_schema(output),
        "strict": True,
    }
    if output.description:
        spec["description"] = output.description
    return spec


def previous_response(messages: Sequence[ChatMessage]) -> tuple[str | None, int]:
    """The last answer this API gave in `messages` (its response id) and where what
    followed it starts; (None, 0) when there is none."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role is Role.ASSISTANT:
            found = message.message_id or ""
            if found.startswith(RESPONSE_ID_PREFIX):
                return found, index + 1
            return None, 0
    return None, 0


def _failure(response: dict[str, Any], model: str) -> ClientError:
    """The error for a response the provider reports as failed (`response.failed`); the
    client masks the request's secrets in it, as in every error it raises."""
    error = response.get("error") or {}
    code = str(error.get("code") or "")
    message = str(error.get("message") or "the response failed")
    text = f"openai model {model!r} failed: {message}" + (f" ({code})" if code else "")
    if code == "rate_limit_exceeded":
        return RateLimitError(text, provider="openai", model=model)
    if code in ("server_error", "vector_store_timeout"):
        return ServerError(text, retryable=True, provider="openai", model=model)
    return InvalidResponseError(text, provider="openai", model=model, retryable=False)


@dataclass(slots=True)
class _PendingCall:
    call_id: str
    name: str
    parts: list[str] = field(default_factory=list)
    arguments: str | None = None


class ResponseEventAssembler:
    """Turns Responses stream events (dicts) into raf updates under the response's id."""

    def __init__(self, message_id: str, model: str = "", hidden: Sequence[str] = ()) -> None:
        self.message_id = message_id
        self.hidden = tuple(hidden)
        """Secrets of the request's hosted tools, masked in hosted results."""
        self.response_id: str | None = None
        self.model_id: str | None = None
        self.events = 0
        self._model = model
        self._calls: dict[str, _PendingCall] = {}
        """Function calls by item id, in the order they started."""
        self._hosted: set[str] = set()
        self._reasoned: set[str] = set()
        """Reasoning items whose summary text streamed already."""
        self._text_seen: set[str] = set()
        self._finish: FinishReason | None = None
        self._usage: UsageDetails | None = None
        self._done = False

    def _update(self, kind: UpdateKind, **kwargs: Any) -> AgentResponseUpdate:
        return AgentResponseUpdate(kind=kind, message_id=self.message_id, **kwargs)

    def feed(self, event: dict[str, Any]) -> list[AgentResponseUpdate]:
        self.events += 1
        kind = str(event.get("type") or "")
        if kind == "error":
            message = event.get("message") or "the stream reported an error"
            raise _failure({"error": {"code": event.get("code"), "message": message}}, self._model)
        response = event.get("response")
        if isinstance(response, dict):
            self._response(response)
        if kind == "response.failed":
            raise _failure(response or {}, self.model_id or self._model)
        if kind in ("response.completed", "response.incomplete"):
            self._done = True
            return []
        if kind == "response.output_text.delta":
            self._text_seen.add(str(event.get("item_id")))
            return [self._update(UpdateKind.TEXT_DELTA, text=str(event.get("delta") or ""))]
        if kind == "response.reasoning_summary_text.delta":
            self._reasoned.add(str(event.get("item_id")))
            return [self._update(UpdateKind.REASONING_DELTA, reasoning=str(event.get("delta")))]
        if kind == "response.function_call_arguments.delta":
            pending = self._calls.get(str(event.get("item_id")))
            if pending is None:
                return []
            pending.parts.append(str(event.get("delta") or ""))
            return [
                self._update(
                    UpdateKind.TOOL_CALL_ARGUMENTS_DELTA,
                    arguments_delta=pending.parts[-1],
                    call_id=pending.call_id,
                    tool_name=pending.name,
                )
            ]
        item = event.get("item")
        if isinstance(item, dict):
            if kind == "response.output_item.added":
                return self._item_added(item)
            if kind == "response.output_item.done":
                return self._item_done(item)
        return []

    def _response(self, response: dict[str, Any]) -> None:
        found = response.get("id")
        if isinstance(found, str) and found and self.response_id is None:
            self.response_id = found
            self.message_id = found  # the answer's message is named by its response
        self.model_id = response.get("model") or self.model_id
        usage = usage_from(response.get("usage"))
        if usage is not None:
            self._usage = usage
        status = response.get("status")
        if status == "incomplete":
            reason = (response.get("incomplete_details") or {}).get("reason")
            self._finish = (
                FinishReason.CONTENT_FILTER if reason == "content_filter" else FinishReason.LENGTH
            )
        elif status == "completed":
            self._finish = FinishReason.STOP

    def _item_added(self, item: dict[str, Any]) -> list[AgentResponseUpdate]:
        item_type = item.get("type")
        item_id = str(item.get("id") or "")
        if item_type == "function_call":
            pending = _PendingCall(
                call_id=str(item.get("call_id") or item_id), name=str(item.get("name") or "")
            )
            self._calls[item_id] = pending
            return [
                self._update(
                    UpdateKind.TOOL_CALL_STARTED, call_id=pending.call_id, tool_name=pending.name
                )
            ]
        if item_type in HOSTED_CALLS:
            self._hosted.add(item_id)
            return [self._hosted_update(UpdateKind.TOOL_CALLING, item)]
        if item_type == "mcp_approval_request":
            pending = self._approval(item)
            return [
                self._update(
                    UpdateKind.TOOL_CALL_STARTED, call_id=pending.call_id, tool_name=pending.name
                )
            ]
        return []

    def _approval(self, item: dict[str, Any]) -> _PendingCall:
        """An MCP approval request as a call of the server's hosted tool, kept with the
        function calls of this answer."""
        item_id = str(item.get("id") or "")
        label = str(item.get("server_label") or "")
        arguments, raw = parse_arguments(str(item.get("arguments") or "{}"))
        pending = _PendingCall(call_id=item_id, name=f"mcp_{label}")
        pending.arguments = json.dumps(
            {
                "server_label": label,
                "tool": str(item.get("name") or ""),
                "arguments": raw if raw is not None else arguments,
                MCP_APPROVAL_KEY: item_id,
            }
        )
        self._calls[item_id] = pending
        return pending

    def _hosted_update(self, kind: UpdateKind, item: dict[str, Any]) -> AgentResponseUpdate:
        item_type = str(item.get("type"))
        name = HOSTED_CALLS[item_type]
        if item_type in ("mcp_call", "mcp_list_tools"):
            name = f"mcp_{item.get('server_label', '')}"
        call_id = str(item.get("id") or "")
        if kind is UpdateKind.TOOL_CALLING:
            return self._update(kind, call_id=call_id, tool_name=name)
        error = item.get("error")
        result = {k: v for k, v in item.items() if k not in ("id", "error") and v is not None}
        content = FunctionResultContent(
            call_id=call_id,
            name=name,
            result=None if error else _scrub(result, self.hidden),
            error=redact(str(error), self.hidden) if error else None,
        )
        return self._update(kind, call_id=call_id, tool_name=name, content=content)

    def _item_done(self, item: dict[str, Any]) -> list[AgentResponseUpdate]:
        item_type = item.get("type")
        item_id = str(item.get("id") or "")
        out: list[AgentResponseUpdate] = []
        if item_type == "function_call":
            pending = self._calls.get(item_id)
            if pending is None:  # a whole answer, or a stream that skipped `added`
                pending = _PendingCall(
                    call_id=str(item.get("call_id") or item_id), name=str(item.get("name") or "")
                )
                self._calls[item_id] = pending
            pending.arguments = item.get("arguments")
        elif item_type == "mcp_approval_request":
            if item_id not in self._calls:  # a whole answer: no `added` came first
                self._approval(item)
        elif item_type == "reasoning":
            if item_id not in self._reasoned:  # a whole answer: its summary was not streamed
                summary = "".join(str(part.get("text") or "") for part in item.get("summary") or ())
                if summary:
                    out.append(self._update(UpdateKind.REASONING_DELTA, reasoning=summary))
            signed = ReasoningContent(
                text="", signature=item_id, protected_data=item.get("encrypted_content")
            )
            out.append(self._update(UpdateKind.REASONING_DELTA, content=signed))
        elif item_type == "message" and item_id not in self._text_seen:
            for part in item.get("content") or ():
                if part.get("type") == "output_text" and part.get("text"):
                    out.append(self._update(UpdateKind.TEXT_DELTA, text=str(part["text"])))
                elif part.get("type") == "refusal" and part.get("refusal"):
                    out.append(self._update(UpdateKind.TEXT_DELTA, text=str(part["refusal"])))
                    self._finish = FinishReason.CONTENT_FILTER
        elif item_type in HOSTED_CALLS:
            if item_id not in self._hosted:
                self._hosted.add(item_id)
                out.append(self._hosted_update(UpdateKind.TOOL_CALLING, item))
            out.append(self._hosted_update(UpdateKind.TOOL_CALLED, item))
        return out

    @property
    def finished(self) -> bool:
        """Whether `response.completed` (or `.incomplete`) arrived."""
        return self._done

    def finish(self) -> list[AgentResponseUpdate]:
        """Complete the calls, then usage and the finish reason."""
        out: list[AgentResponseUpdate] = []
        for pending in self._calls.values():
            text = pending.arguments if pending.arguments is not None else "".join(pending.parts)
            arguments, raw = parse_arguments(text)
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
        reason = self._finish or FinishReason.STOP
        if reason is FinishReason.STOP and any(u.kind is UpdateKind.TOOL_CALL_ENDED for u in out):
            reason = FinishReason.TOOL_CALLS
        out.append(self._update(UpdateKind.FINISHED, finish_reason=reason))
        return out


_PASSED = {"temperature": "temperature", "top_p": "top_p", "max_tokens": "max_output_tokens"}


@dataclass(kw_only=True, slots=True)
class ResponsesWire:
    """Request bodies and answers of the Responses API (`POST /responses`)."""

    store: bool = False
    """Let the provider keep responses. Off: nothing stays there, so reasoning is asked
    for in encrypted form and sent back with the history."""
    server_state: bool = False
    """Send only what followed the last answer, naming it as `previous_response_id`
    (needs `store`): the provider holds the conversation."""
    reasoning: dict[str, Any] | None = None
    """The `reasoning` setting (`{"effort": "low", "summary": "auto"}`) for reasoning models."""
    model: str = ""

    hidden: tuple[str, ...] = ()
    """Secrets of this call's hosted tools (set by `for_options`)."""

    def for_options(self, options: ChatOptions) -> ResponsesWire:
        """This format for one call: the secrets of its hosted tools known, so that errors
        and results never show them."""
        hidden = tuple(hosted_secrets(options.tools or ()))
        return replace(self, hidden=hidden) if hidden else self

    def request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, model: str, stream: bool
    ) -> dict[str, Any]:
        approvals = mcp_approvals(messages)  # before the history is cut at the last answer
        previous, start = previous_response(messages) if self.server_state else (None, 0)
        if previous is not None:
            system = [m for m in messages[:start] if m.role is Role.SYSTEM]
            messages = [*system, *messages[start:]]
        instructions, items = to_input(messages, approvals)
        body: dict[str, Any] = {"model": model, "input": items, "store": self.store}
        if previous is not None:
            body["previous_response_id"] = previous
        if instructions is not None:
            body["instructions"] = instructions
        if options.tools and options.tool_choice != "none":
            body["tools"] = to_tools(options.tools)
            if options.tool_choice is not None:
                body["tool_choice"] = to_tool_choice(options.tool_choice)
        for name, wire_name in _PASSED.items():
            value = getattr(options, name)
            if value is not None:
                body[wire_name] = value
        if self.reasoning:
            body["reasoning"] = dict(self.reasoning)
            if not self.store:
                body["include"] = ["reasoning.encrypted_content"]
        if options.output_schema is not None:
            body["text"] = {"format": text_format(options.output_schema)}
        if stream:
            body["stream"] = True
        body.update(options.additional)
        return body

    def check_output_schema(self, output: OutputSchema) -> None:
        """Refuse a schema strict mode cannot express (naming the field)."""
        strict_json_schema(output)

    def assembler(self, message_id: str) -> ResponseEventAssembler:
        return ResponseEventAssembler(message_id, self.model, self.hidden)

    def parse(self, data: dict[str, Any], message_id: str) -> list[AgentResponseUpdate] | None:
        if data.get("object") != "response" and "output" not in data:
            return None
        if data.get("status") == "failed":
            raise _failure(data, str(data.get("model") or self.model))
        assembler = self.assembler(message_id)
        updates = assembler.feed({"type": "response.created", "response": data})
        for item in data.get("output") or ():
            if isinstance(item, dict):
                updates += assembler.feed({"type": "response.output_item.done", "item": item})
        return updates + assembler.finish()
