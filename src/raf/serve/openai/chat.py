"""An OpenAI-compatible API (`/v1/models`, `/v1/chat/completions`) over hosted agents;
the Responses API is `raf.serve.openai.responses`, on the helpers here.

The model name is the agent's name. Each request is one run in a fresh session, as the
client sends the whole conversation every time. The agent runs its own tools; the
client's function `tools` are offered beside them, and a call of one ends the turn with
`tool_calls` for the client to run (it sends the result back as a `tool` message). The
text of every model call of a run is one answer, joined with a blank line. A run that
stops to ask a person's approval answers 409 (use the native API for agents that ask).
`response_format` becomes the run's output type; `n` runs the agent `n` times. Errors
have OpenAI's shape, status, type, code and param.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, cast

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field

from raf.agent.agent import Agent
from raf.agent.output_type import (
    OutputMismatch,
    OutputType,
    check_for_client,
    jsonable,
    off_the_loop,
    resolve_output_type,
)
from raf.core.agent_like import AgentLike
from raf.core.client_tool import ClientTool
from raf.core.contents import FunctionCallContent
from raf.core.errors import ConfigurationError, MissingExtraError, RafError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions, ChatOptions, ToolChoice
from raf.core.responses import AgentResponse, AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.usage import UsageDetails
from raf.serve.answer_text import StreamedText, answer_text
from raf.serve.client_tools import (
    arguments_json,
    call_arguments,
    client_tools,
    handed_back,
    result_message,
    tool_choice,
)
from raf.serve.errors import ServeError, openai_shaped
from raf.serve.hosting import AgentHost
from raf.serve.native.routes import SSE_HEADERS, EventStream
from raf.serve.requests import error_for, json_line, parse_body

MAX_CHOICES = 8
"""Most choices (`n`) one chat completion may ask for: each is a whole run of the agent."""


class OpenAIMessage(BaseModel):
    """One message of a chat-completions request (fields the API adds are ignored)."""

    # ignored, not kept: nothing reads them, and keeping them costs every request
    model_config = ConfigDict(extra="ignore")
    role: str
    content: str | list[dict[str, Any]] | None = None
    tool_calls: list[dict[str, Any]] | None = None
    """An assistant message's calls of the client's tools."""
    tool_call_id: str | None = None
    """A tool message's call: the client's result of it."""


class ChatCompletionRequest(BaseModel):
    """The parts of a chat-completions request an agent can honour (the others are
    ignored)."""

    model_config = ConfigDict(extra="ignore")
    model: str
    messages: list[OpenAIMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: dict[str, Any] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    n: int | None = None
    response_format: dict[str, Any] | None = None


FINISH = {
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool_calls",
    FinishReason.CONTENT_FILTER: "content_filter",
}


def invalid(param: str, message: str, code: str = "invalid_value") -> ServeError:
    """A 400 about the request field `param`, as OpenAI's API answers one."""
    error = ServeError(400, code, f"{param}: {message}")
    error.param = param
    return error


def openai_error(error: ServeError) -> JSONResponse:
    """An error in the shape OpenAI clients read (`error.message`, `error.type`,
    `error.param`, `error.code`), with OpenAI's status (400 for a request that does not
    fit)."""
    status, body = openai_shaped(error)
    return JSONResponse(body, status_code=status)


def stream_error(exc: BaseException) -> dict[str, Any]:
    """A failure midway through a stream, as the `error` object of its last event."""
    return openai_shaped(error_for(exc))[1]


def model_not_found(name: str, param: str | None = None) -> ServeError:
    """The 404 OpenAI answers for a model it does not have: `param` null on chat
    completions, `model` when retrieving the model, as OpenAI writes them."""
    error = ServeError(
        404,
        "model_not_found",
        f"no model named {name!r}: the models are the hosted agents (GET /v1/models)",
    )
    error.param = param
    return error


def hosted_agent(host: AgentHost, name: str) -> AgentLike:
    """The agent a request's `model` names; a 404 naming the field when there is none."""
    agent = host.agents.get(name)
    if agent is None:
        raise model_not_found(name)
    return agent


def part_text(parts: list[dict[str, Any]], where: str, kinds: tuple[str, ...]) -> str:
    """The text of a message's content parts; a 400 naming the part that is not text."""
    out: list[str] = []
    for index, part in enumerate(parts):
        kind = part.get("type")
        if kind not in kinds or not isinstance(part.get("text"), str):
            raise invalid(
                f"{where}[{index}].type",
                f"only text parts ({', '.join(kinds)}) are supported, got {kind!r}",
            )
        out.append(part["text"])
    return "".join(out)


def to_messages(request: ChatCompletionRequest) -> list[ChatMessage]:
    """The conversation as raf messages: system, developer, user and assistant text,
    the assistant's calls of the client's tools and the client's results of them (tool
    messages); a 400 naming the message that does not fit, as OpenAI names it."""
    out: list[ChatMessage] = []
    names: dict[str, str] = {}
    for index, message in enumerate(request.messages):
        where = f"messages[{index}]"
        role = message.role
        content = message.content
        if content is None and role != "assistant":
            if "content" not in message.model_fields_set:
                raise invalid(
                    f"{where}.content",
                    f"Missing required parameter: '{where}.content'.",
                    "missing_required_parameter",
                )
            error = ServeError(
                400, "null_content", "Invalid value for 'content': expected a string, got null."
            )
            error.param = f"messages.[{index}].content"  # as OpenAI writes this one
            raise error
        if content is None or isinstance(content, str):
            text = content or ""
        else:
            text = part_text(content, f"{where}.content", ("text",))
        if role in ("system", "developer"):
            out.append(ChatMessage.system(text))
        elif role == "user":
            out.append(ChatMessage.user(text))
        elif role == "assistant":
            calls = [
                _call(c, f"{where}.tool_calls[{i}]") for i, c in enumerate(message.tool_calls or [])
            ]
            names.update((c.call_id, c.name) for c in calls)
            out.append(ChatMessage.assistant(text, calls=calls))
        elif role == "tool":
            if not message.tool_call_id:
                raise invalid(
                    f"{where}.tool_call_id",
                    f"Missing required parameter: '{where}.tool_call_id'.",
                    "missing_required_parameter",
                )
            out.append(result_message(message.tool_call_id, text, names))
        else:
            raise invalid(
                f"{where}.role",
                f"role {role!r} is not supported; send system, developer, user, assistant "
                "or tool messages",
            )
    return out


def _call(given: dict[str, Any], where: str) -> FunctionCallContent:
    """One of an assistant message's `tool_calls`."""
    spec = given.get("function")
    call_id = given.get("id")
    if not isinstance(call_id, str) or not isinstance(spec, dict):
        raise invalid(where, "must have an 'id' and a 'function'", "invalid_type")
    name = spec.get("name")
    if not isinstance(name, str):
        raise invalid(f"{where}.function.name", "is missing", "missing_required_parameter")
    arguments = call_arguments(spec.get("arguments", "{}"), f"{where}.function.arguments")
    return FunctionCallContent(call_id=call_id, name=name, arguments=arguments)


JSON_OBJECT_INSTRUCTION = "Answer with one JSON object and nothing else."
"""Added to the agent's instructions when a client asks for `json_object`."""


@dataclass(kw_only=True, slots=True)
class RunFormat:
    """The answer's format a request asks for (`response_format`, `text.format`): what
    the run is given and how its answer is written."""

    output: OutputType | None = None
    """`json_schema`: the run's output type (the answer is checked, and sent back to the
    model with what was wrong, as for any output type)."""
    json_object: OutputType | None = None
    """`json_object`: any JSON object; the model is asked for one (natively where its API
    has the mode) and the answer checked once the run is done."""

    @property
    def structured(self) -> bool:
        """Whether the answer is JSON: streamed as one piece, once checked."""
        return self.output is not None or self.json_object is not None

    def chat_options(
        self, tools: list[ClientTool] | None = None, choice: ToolChoice | None = None
    ) -> ChatOptions | None:
        """The model settings of the run: JSON mode for `json_object`, the client's
        tools and its `tool_choice`."""
        if self.json_object is None and not tools and choice is None:
            return None
        return ChatOptions(
            response_format={"type": "json_object"} if self.json_object is not None else None,
            tools=list(tools or ()),
            tool_choice=choice,
        )

    def instructions(self, given: str | None = None) -> str | None:
        """`given` instructions with what the format adds."""
        if self.json_object is None:
            return given
        return f"{given}\n\n{JSON_OBJECT_INSTRUCTION}" if given else JSON_OBJECT_INSTRUCTION

    def options(
        self,
        instructions: str | None = None,
        tools: list[ClientTool] | None = None,
        choice: ToolChoice | None = None,
    ) -> AgentRunOptions:
        """The options of one run outside the host's sessions, with `instructions` given
        for it (and what the format adds) and the client's tools."""
        if self is PLAIN and instructions is None and not tools and choice is None:
            return AgentRunOptions()
        return AgentRunOptions(
            output_type=self.output,
            chat_options=self.chat_options(tools, choice),
            additional_instructions=self.instructions(instructions),
        )

    def answer(self, text: str, value: Any) -> str:
        """The answer's text as the client gets it: the checked JSON, compact."""
        if self.output is not None:
            return json.dumps(jsonable(value), ensure_ascii=False)
        if self.json_object is not None:
            try:
                parsed = self.json_object.parse(text)
            except OutputMismatch as exc:
                raise ServeError(
                    502,
                    "model_error",
                    f"the model's answer is not the JSON object asked for: {exc.errors}",
                ) from None
            return json.dumps(parsed, ensure_ascii=False)
        return text


PLAIN = RunFormat()
"""A request that asks for no format."""


def run_format(agent: AgentLike, given: dict[str, Any] | None, param: str) -> RunFormat:
    """The format `given` (OpenAI's `response_format`, or the Responses API's
    `text.format` when `param` says so) as this agent's run takes it; a 400 naming the
    field when the format is unknown, its schema invalid, or the agent cannot take it."""
    if given is None:
        return PLAIN
    kind = given.get("type")
    if kind == "text":
        return PLAIN
    if kind not in ("json_schema", "json_object"):
        raise invalid(
            f"{param}.type", f"{kind!r} is not a format; use text, json_schema or json_object"
        )
    if not isinstance(agent, Agent):
        raise invalid(
            param,
            f"agent {agent.name!r} is not one agent on one model (an orchestration or a "
            "workflow served as an agent), so it cannot be held to an answer's format; "
            "leave the format out",
            "unsupported_response_format",
        )
    if kind == "json_object":
        return RunFormat(json_object=_resolved({"type": "object"}, param))
    # chat completions nest the schema in `json_schema`; the Responses API does not
    spec = given.get("json_schema") if "json_schema" in given else given
    where = f"{param}.json_schema" if "json_schema" in given else param
    if not isinstance(spec, dict):
        raise invalid(where, "must be an object with 'name' and 'schema'")
    schema = spec.get("schema")
    if not isinstance(schema, dict):
        raise invalid(f"{where}.schema", "must be a JSON Schema object")
    named = dict(schema)
    if isinstance(spec.get("name"), str) and "title" not in named:
        named["title"] = spec["name"]
    if isinstance(spec.get("description"), str) and "description" not in named:
        named["description"] = spec["description"]
    output = _resolved(named, f"{where}.schema")
    try:
        check_for_client(agent.leaf_client, output, where=f"{where}.schema")
    except ConfigurationError as exc:
        raise invalid(
            f"{where}.schema",
            f"the agent's model cannot be held to this schema: {exc.message}",
            "invalid_json_schema",
        ) from None
    return RunFormat(output=output)


async def request_format(agent: AgentLike, given: dict[str, Any] | None, param: str) -> RunFormat:
    """`run_format`, on an output worker when there is a schema to check: a client's
    schema is CPU work of the client's choosing (bounded by `SCHEMA_LIMITS`), never
    done on the event loop."""
    if not isinstance(given, dict) or given.get("type") != "json_schema":
        return run_format(agent, given, param)
    return await off_the_loop(run_format, agent, given, param)


def _resolved(schema: dict[str, Any], param: str) -> OutputType:
    try:
        return resolve_output_type(schema, where=param)
    except MissingExtraError as exc:
        raise ServeError(501, "missing_extra", str(exc)) from None
    except ConfigurationError as exc:
        raise invalid(param, exc.message, "invalid_json_schema") from None


def choices_wanted(request: ChatCompletionRequest) -> int:
    """How many choices (`n`) a completion asks for; a 400 naming `n` past what is served."""
    n = request.n
    if n is None or n == 1:
        return 1
    if n < 1 or n > MAX_CHOICES:
        raise invalid("n", f"must be 1 to {MAX_CHOICES} (each choice is a whole run), not {n}")
    if request.stream:
        raise invalid(
            "n",
            f"a streamed completion has one choice; ask for n={n} without stream, or stream "
            "with n=1",
        )
    return n


def reported(usage: UsageDetails | None) -> UsageDetails | None:
    """The run's usage when its model reported any; None when it did not (never zeros)."""
    if usage is None or not (usage.input_tokens or usage.output_tokens or usage.total_tokens):
        return None
    return usage


def _usage(usage: UsageDetails | None) -> dict[str, int] | None:
    counted = reported(usage)
    if counted is None:
        return None
    return {
        "prompt_tokens": counted.input_tokens,
        "completion_tokens": counted.output_tokens,
        "total_tokens": counted.total_tokens or counted.input_tokens + counted.output_tokens,
    }


def approval_refusal(names: set[str], waiting: str = "") -> ServeError:
    """The 409 for a run that stopped to ask a person, naming the tools it wants (and,
    in `waiting`, where the run waits, when it was kept)."""
    return ServeError(
        409,
        "approval_required",
        f"the agent wants to call {', '.join(sorted(names)) or 'a tool'}, which needs a "
        "person's approval; this API cannot ask one: use raf's native API (or ACP, AG-UI) "
        f"for agents whose tools need approval{waiting}",
    )


def _refuse_pending(response: AgentResponse) -> None:
    if response.finish_reason is FinishReason.AWAITING_APPROVAL:
        raise approval_refusal({p.name for p in response.pending_approvals})


def completion(
    name: str,
    run_id: str,
    responses: list[AgentResponse],
    form: RunFormat = PLAIN,
    tools: list[ClientTool] | None = None,
) -> dict[str, Any]:
    """A `chat.completion` object for finished runs, one choice each; `usage` is their
    sum, and left out when a model reported none. A run that called the client's
    `tools` ends with those calls (`tool_calls`) for the client to run."""
    choices = [
        {
            "index": index,
            "message": _message(r, form, {t.name for t in tools or ()}),
            "finish_reason": FINISH.get(r.finish_reason or FinishReason.STOP, "stop"),
            "logprobs": None,
        }
        for index, r in enumerate(responses)
    ]
    body: dict[str, Any] = {
        "id": f"chatcmpl-{run_id}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": name,
        "choices": choices,
    }
    usage = responses[0].usage if len(responses) == 1 else _summed(responses)
    counts = _usage(usage)
    if counts is not None:
        body["usage"] = counts
    return body


def _message(response: AgentResponse, form: RunFormat, names: set[str]) -> dict[str, Any]:
    """A choice's assistant message: the answer, or the calls handed to the client."""
    if response.finish_reason is not FinishReason.TOOL_CALLS:
        return {"role": "assistant", "content": form.answer(answer_text(response), response.value)}
    calls = handed_back(response.messages, names)
    return {
        "role": "assistant",
        "content": answer_text(response) or None,
        "tool_calls": [tool_call(c) for c in calls],
    }


def tool_call(call: FunctionCallContent, index: int | None = None) -> dict[str, Any]:
    """A call of a client's tool as chat completions write it (with its `index` in a
    streamed delta)."""
    out: dict[str, Any] = {} if index is None else {"index": index}
    out.update(
        id=call.call_id,
        type="function",
        function={"name": call.name, "arguments": arguments_json(call)},
    )
    return out


def _summed(responses: list[AgentResponse]) -> UsageDetails | None:
    if any(reported(r.usage) is None for r in responses):
        return None  # a partial count would pass for the whole one
    total = UsageDetails()
    for response in responses:
        assert response.usage is not None
        total = total + response.usage
    return total


async def chat_completion(host: AgentHost, raw: bytes) -> Response:
    """A chat-completions request's answer: the body's `model` is the agent's name; a
    `chat.completion`, or its chunks as server-sent events when `stream` is true."""
    try:
        body = parse_body(raw, ChatCompletionRequest)
        agent = hosted_agent(host, body.model)
        messages = to_messages(body)
        n = choices_wanted(body)
        form = await request_format(agent, body.response_format, "response_format")
        tools = client_tools(agent, body.tools, nested=True)
        choice = tool_choice(body.tool_choice, "tool_choice", nested=True)
        options = form.options(tools=tools, choice=choice)
        run_id = uuid.uuid4().hex
        if body.stream:
            usage = bool((body.stream_options or {}).get("include_usage"))
            return EventStream(
                _chunks(agent, body.model, run_id, messages, usage, form, options, tools),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
            )
        if n == 1:
            responses = [await agent.run(messages, agent.create_session(), options)]
        else:
            async with asyncio.TaskGroup() as runs:
                tasks = [
                    runs.create_task(agent.run(messages, agent.create_session(), options))
                    for _ in range(n)
                ]
            responses = [task.result() for task in tasks]
        for response in responses:
            _refuse_pending(response)
        return JSONResponse(completion(body.model, run_id, responses, form, tools))
    except (ServeError, RafError) as exc:
        return openai_error(error_for(exc))
    except ExceptionGroup as group:  # one of n runs failed: the others were stopped
        return openai_error(error_for(group.exceptions[0]))


@dataclass(frozen=True)
class OpenAIPlace:
    """The host the `/v1` endpoints serve from; a router's dependency puts it in each
    request's state."""

    host: AgentHost

    def attach(self, request: Request) -> None:
        """Make this the place of `request` (the router's dependency)."""
        request.state.raf_openai = self


def host_of(request: Request) -> AgentHost:
    """The host the router serves this request from."""
    return cast(OpenAIPlace, request.state.raf_openai).host


def model_card(name: str) -> dict[str, Any]:
    """An agent's name as an OpenAI model object."""
    return {"id": name, "object": "model", "created": 0, "owned_by": "raf"}


async def models(request: Request) -> dict[str, Any]:
    """The agents, as OpenAI models."""
    return {"object": "list", "data": [model_card(n) for n in host_of(request).agents]}


async def model(name: str, request: Request) -> Response:
    """One agent, as an OpenAI model."""
    if name not in host_of(request).agents:
        return openai_error(model_not_found(name, "model"))
    return JSONResponse(model_card(name))


async def chat_completions(request: Request) -> Response:
    """OpenAI Chat Completions on an agent (model: the agent's name), streamed or not."""
    return await chat_completion(host_of(request), await request.body())


def openai_router(host: AgentHost) -> APIRouter:
    """The `/v1` routes over `host`."""
    router = APIRouter(prefix="/v1", dependencies=[Depends(OpenAIPlace(host).attach)])
    router.add_api_route("/models", models, methods=["GET"])
    router.add_api_route("/models/{name}", model, methods=["GET"])
    router.add_api_route("/chat/completions", chat_completions, methods=["POST"])
    return router


async def _chunks(
    agent: AgentLike,
    name: str,
    run_id: str,
    messages: list[ChatMessage],
    include_usage: bool,
    form: RunFormat,
    options: AgentRunOptions,
    tools: list[ClientTool],
) -> AsyncIterator[str]:
    """`chat.completion.chunk` events, then `[DONE]`; a failure midway (a tool that needs
    a person's approval, named) is an error event, then `[DONE]`, as OpenAI ends one.
    The text of several model calls is joined as a whole answer joins it; calls of the
    client's tools come last, as `tool_calls` deltas."""
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

    yield chunk({"role": "assistant", "content": ""}, None)
    usage: UsageDetails | None = None
    final: AgentResponseUpdate | None = None
    text: list[str] = []
    asking: set[str] = set()
    structured = form.structured
    joined = StreamedText()
    names = {t.name for t in tools}
    calls: dict[str, FunctionCallContent] = {}
    try:
        async for update in agent.run_stream(messages, agent.create_session(), options):
            kind = update.kind
            piece = joined.piece(update)
            content = update.content
            if piece:
                if structured:
                    text.append(piece)
                else:
                    yield chunk({"content": piece}, None)
            elif isinstance(content, FunctionCallContent) and content.name in names:
                calls[content.call_id] = content
            elif kind is UpdateKind.USAGE and update.usage is not None:
                usage = update.usage
            elif kind is UpdateKind.APPROVAL_REQUEST:
                asking.add(approval_name(update))
            elif kind is UpdateKind.FINISHED:
                final = update
                usage = update.usage or usage
        finish = final.finish_reason if final is not None else None
        if finish is FinishReason.AWAITING_APPROVAL:
            raise approval_refusal(asking)
        if finish is FinishReason.TOOL_CALLS:
            if structured and text:
                yield chunk({"content": "".join(text)}, None)
            for index, call in enumerate(calls.values()):
                yield chunk({"tool_calls": [tool_call(call, index)]}, None)
        elif structured:
            value = final.value if final is not None else None
            yield chunk({"content": form.answer("".join(text), value)}, None)
    except (ServeError, RafError) as exc:
        yield f"data: {json_line(stream_error(exc))}\n\n"
        yield "data: [DONE]\n\n"
        return
    yield chunk({}, FINISH.get(finish or FinishReason.STOP, "stop"))
    if include_usage:
        yield event([], usage=_usage(usage))
    yield "data: [DONE]\n\n"


def approval_name(update: AgentResponseUpdate) -> str:
    """The tool an approval request update asks about."""
    content = update.content
    return update.tool_name or str(getattr(content, "name", "") or "a tool")
