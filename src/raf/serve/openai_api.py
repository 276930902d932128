"""An OpenAI-compatible API (`/v1/models`, `/v1/chat/completions`) over hosted agents.

The model name is the agent's name. Each request is one run in a fresh session, as the
client sends the whole conversation every time; the agent runs its own tools, so
`tools` and tool messages from the client are refused, and a run that stops to ask a
person's approval answers 409 (use the native API for agents that ask).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import APIRouter, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from raf.core.errors import RafError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse, FinishReason, UpdateKind
from raf.core.usage import UsageDetails
from raf.serve.errors import ServeError
from raf.serve.hosting import AgentHost
from raf.serve.native import SSE_HEADERS, EventStream
from raf.serve.requests import error_for, json_line, parse_body


class OpenAIMessage(BaseModel):
    """One message of a chat-completions request (fields the API adds are ignored)."""

    # ignored, not kept: nothing reads them, and keeping them costs every request
    model_config = ConfigDict(extra="ignore")
    role: str
    content: str | list[dict[str, Any]] | None = None


class ChatCompletionRequest(BaseModel):
    """The parts of a chat-completions request an agent can honour (the others are
    ignored)."""

    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[OpenAIMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None


FINISH = {
    FinishReason.LENGTH: "length",
    FinishReason.CONTENT_FILTER: "content_filter",
}


def openai_error(error: ServeError) -> JSONResponse:
    """An error in the shape OpenAI clients read (`error.message`, `error.type`)."""
    body = {
        "error": {
            "message": error.message,
            "type": error.code,
            "param": None,
            "code": error.code,
        }
    }
    return JSONResponse(body, status_code=error.status)


def _text(message: OpenAIMessage, index: int) -> str:
    if message.content is None or isinstance(message.content, str):
        return message.content or ""
    parts: list[str] = []
    for part in message.content:
        if part.get("type") != "text" or not isinstance(part.get("text"), str):
            raise ServeError(
                400,
                "invalid_request_error",
                f"messages.{index}: only text parts are supported, got {part.get('type')!r}",
            )
        parts.append(part["text"])
    return "".join(parts)


def to_messages(request: ChatCompletionRequest) -> list[ChatMessage]:
    """The conversation as raf messages: system, developer, user and assistant text."""
    if request.tools:
        raise ServeError(
            400,
            "invalid_request_error",
            "'tools' cannot be given: the agent calls its own tools",
        )
    out: list[ChatMessage] = []
    for index, message in enumerate(request.messages):
        text = _text(message, index)
        if message.role in ("system", "developer"):
            out.append(ChatMessage.system(text))
        elif message.role == "user":
            out.append(ChatMessage.user(text))
        elif message.role == "assistant":
            out.append(ChatMessage.assistant(text))
        else:
            raise ServeError(
                400,
                "invalid_request_error",
                f"messages.{index}: role {message.role!r} is not supported (the agent runs "
                "its own tools); send system, user and assistant messages",
            )
    return out


def _usage(usage: UsageDetails | None) -> dict[str, int] | None:
    if usage is None:
        return None
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


def _refuse_pending(response: AgentResponse | None, finish: FinishReason | None) -> None:
    if finish is FinishReason.AWAITING_APPROVAL:
        calls = response.pending_approvals if response is not None else []
        names = ", ".join(sorted({p.name for p in calls})) or "a tool"
        raise ServeError(
            409,
            "approval_required",
            f"the agent wants to call {names}, which needs a person's approval; "
            "use raf's native API to answer approvals",
        )


def completion(name: str, run_id: str, response: AgentResponse) -> dict[str, Any]:
    """A `chat.completion` object for a finished run."""
    return {
        "id": f"chatcmpl-{run_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": response.text},
                "finish_reason": FINISH.get(response.finish_reason or FinishReason.STOP, "stop"),
                "logprobs": None,
            }
        ],
        "usage": _usage(response.usage)
        or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


async def chat_completion(host: AgentHost, raw: bytes) -> Response:
    """A chat-completions request's answer: the body's `model` is the agent's name; a
    `chat.completion`, or its chunks as server-sent events when `stream` is true."""
    try:
        body = parse_body(raw, ChatCompletionRequest)
        agent = host.agents.get(body.model)
        if agent is None:
            raise ServeError(404, "model_not_found", f"no model named {body.model!r}")
        messages = to_messages(body)
        run_id = uuid.uuid4().hex
        if body.stream:
            usage = bool((body.stream_options or {}).get("include_usage"))
            return EventStream(
                _chunks(host, body.model, run_id, messages, usage),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        response = await agent.run(messages, agent.create_session(), AgentRunOptions())
        _refuse_pending(response, response.finish_reason)
        return JSONResponse(completion(body.model, run_id, response))
    except (ServeError, RafError) as exc:
        return openai_error(error_for(exc))


def openai_router(host: AgentHost) -> APIRouter:
    """The `/v1` routes over `host`."""
    router = APIRouter(prefix="/v1")

    def model_card(name: str) -> dict[str, Any]:
        return {"id": name, "object": "model", "created": 0, "owned_by": "raf"}

    @router.get("/models")
    async def models() -> dict[str, Any]:
        """The agents, as OpenAI models."""
        return {"object": "list", "data": [model_card(n) for n in host.agents]}

    @router.get("/models/{name}")
    async def model(name: str) -> Response:
        """One agent, as an OpenAI model."""
        if name not in host.agents:
            return openai_error(ServeError(404, "model_not_found", f"no model named {name!r}"))
        return JSONResponse(model_card(name))

    @router.post("/chat/completions")
    async def chat_completions(request: Request) -> Response:
        """OpenAI Chat Completions on an agent (model: the agent's name), streamed or not."""
        return await chat_completion(host, await request.body())

    return router


async def _chunks(
    host: AgentHost, name: str, run_id: str, messages: list[ChatMessage], include_usage: bool
) -> AsyncIterator[str]:
    """`chat.completion.chunk` events, then `[DONE]`; a failure midway is an error event."""
    created = int(time.time())

    def event(choices: list[dict[str, Any]], **extra: Any) -> str:
        body: dict[str, Any] = {
            "id": f"chatcmpl-{run_id}",
            "object": "chat.completion.chunk",
            "created": created,
            "model": name,
            "choices": choices,
            **extra,
        }
        return f"data: {json_line(body)}\n\n"

    def chunk(delta: dict[str, Any], finish: str | None) -> str:
        return event([{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}])

    agent = host.agent(name)
    yield chunk({"role": "assistant", "content": ""}, None)
    usage: UsageDetails | None = None
    finish: FinishReason | None = None
    try:
        async for update in agent.run_stream(messages, agent.create_session(), AgentRunOptions()):
            if update.kind is UpdateKind.TEXT_DELTA and update.text:
                yield chunk({"content": update.text}, None)
            elif update.kind is UpdateKind.USAGE and update.usage is not None:
                usage = update.usage
            elif update.kind is UpdateKind.FINISHED:
                finish = update.finish_reason
                usage = update.usage or usage
        _refuse_pending(None, finish)
    except (ServeError, RafError) as exc:
        error = error_for(exc)
        body = {"error": {"message": error.message, "type": error.code, "code": error.code}}
        yield f"data: {json_line(body)}\n\n"
        return
    yield chunk({}, FINISH.get(finish or FinishReason.STOP, "stop"))
    if include_usage:
        counts = _usage(usage) or {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        yield event([], usage=counts)
    yield "data: [DONE]\n\n"
