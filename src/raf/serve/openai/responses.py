"""OpenAI's Responses API (`POST /v1/responses`, `GET` and `DELETE /v1/responses/{id}`)
over hosted agents.

A response is one run of the agent its `model` names, in a session of the server: a new
one, or, with `previous_response_id`, the session of that response, continued from its
turn; an earlier response of a conversation that went on after it continues in a new
branch (a new session holding the conversation up to it), the other branch left as it is.
What a response id stands for (its agent, session, turn and the response object itself)
is one record of the server's session store, under a key scoped to its owner, so a
continuation or a `GET` reaches any worker sharing the store and only the token that made
it. `store: false` keeps nothing: the run goes on in a copy of the conversation, and its
id names nothing afterwards. The agent runs its own tools; the client's function `tools`
are offered beside them, and a call of one ends the response with a `function_call` item
for the client to run (continued with a `function_call_output`). A run that stops to ask
a person's approval fails the response, naming the tools.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict
from starlette.background import BackgroundTask

from raf.core.agent_like import AgentLike
from raf.core.client_tool import ClientTool
from raf.core.contents import FunctionCallContent
from raf.core.errors import RafError, SessionError, SessionNotFoundError
from raf.core.messages import ChatMessage, Role
from raf.core.options import ToolChoice
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.sessions import AgentSession
from raf.core.usage import UsageDetails
from raf.serve.answer_text import StreamedText
from raf.serve.client_tools import (
    arguments_json,
    call_arguments,
    client_tools,
    result_message,
    tool_choice,
)
from raf.serve.double_texting import IF_BUSY
from raf.serve.errors import ServeError
from raf.serve.hosting import SERVE_KEY, ActiveRun, AgentHost
from raf.serve.native.routes import SSE_HEADERS, EventStream
from raf.serve.openai.chat import (
    RunFormat,
    approval_name,
    approval_refusal,
    invalid,
    openai_error,
    part_text,
    reported,
    request_format,
    stream_error,
)
from raf.serve.requests import error_for, json_line, log, parse_body, store_failure
from raf.serve.security import owner_of_request
from raf.serve.tenancy import Tenant

RESPONSE_KEY = "raf_openai_response"
"""Metadata key of a response record: the response object, its agent, session and turn."""

RESPONSE_PREFIX = "oai-response."
"""What a response record's key starts with, after its owner's tag."""

RESPONSE_ID = re.compile(r"^resp_[0-9a-f]{32}$")
"""The ids this server gives responses; any other names none."""

ROLES: dict[str, Callable[[str], ChatMessage]] = {
    "user": ChatMessage.user,
    "assistant": ChatMessage.assistant,
}

TEXT_PARTS = ("input_text", "output_text")


class ResponsesRequest(BaseModel):
    """The parts of a Responses API request an agent can honour (the others are
    ignored)."""

    model_config = ConfigDict(extra="ignore")
    model: str
    input: str | list[dict[str, Any]]
    instructions: str | None = None
    stream: bool = False
    previous_response_id: str | None = None
    store: bool = True
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    text: dict[str, Any] | None = None
    metadata: dict[str, str] | None = None
    background: bool = False
    """Run it in the background: answered at once (`queued` or `in_progress`), polled
    with `GET /v1/responses/{id}`, resumed with `stream=true&starting_after=N`,
    cancelled with `POST /v1/responses/{id}/cancel` (needs `store: true`)."""
    if_busy: Any = None
    """raf's extension: what to do when the conversation has a run in progress
    (`reject`, `enqueue`, `interrupt`, `rollback`; the server's default when left out)."""


def stream_position(value: str | None) -> int:
    """`starting_after` as a `sequence_number` (-1 when left out: from the first event);
    a 400 naming the field otherwise."""
    if value is None:
        return -1
    try:
        number = int(value)
    except ValueError:
        number = -2
    if number < -1:
        raise invalid(
            "starting_after",
            f"{value!r} is not a sequence_number; send an event's number (0 or more)",
        )
    return number


def responses_if_busy(value: Any) -> str | None:
    """The request's `if_busy` (raf's extension), or a 400 naming the field."""
    if value is None:
        return None
    if value not in IF_BUSY:
        raise invalid("if_busy", f"{value!r} is not a strategy; use one of {', '.join(IF_BUSY)}")
    return str(value)


def input_messages(given: str | list[dict[str, Any]]) -> list[ChatMessage]:
    """A request's `input` as raf messages: a string is one user message; items are
    messages (`user`, `assistant`, `system`, `developer`) of text, calls of the client's
    tools (`function_call`) and the client's results of them (`function_call_output`); a
    400 naming the item for anything else."""
    if isinstance(given, str):
        if not given:
            raise invalid("input", "is empty; send the user's message")
        return [ChatMessage.user(given)]
    if not given:
        raise invalid("input", "is empty; send at least one message")
    out: list[ChatMessage] = []
    names: dict[str, str] = {}
    for index, item in enumerate(given):
        where = f"input[{index}]"
        kind = item.get("type", "message")
        if kind == "function_call":
            call = _function_call(item, where)
            names[call.call_id] = call.name
            if out and out[-1].role is Role.ASSISTANT:
                out[-1].contents.append(call)
            else:
                out.append(ChatMessage.assistant(calls=[call]))
            continue
        if kind == "function_call_output":
            call_id = item.get("call_id")
            if not isinstance(call_id, str):
                raise invalid(
                    f"{where}.call_id",
                    f"Missing required parameter: '{where}.call_id'.",
                    "missing_required_parameter",
                )
            out.append(result_message(call_id, item.get("output", ""), names))
            continue
        if kind != "message":
            raise invalid(
                f"{where}.type",
                f"{kind!r} items are not taken; send messages, function_call and "
                "function_call_output items, and continue with previous_response_id",
            )
        role = item.get("role")
        content = item.get("content")
        if isinstance(content, str):
            text = content
        elif isinstance(content, list):
            text = part_text(content, f"{where}.content", TEXT_PARTS)
        else:
            raise invalid(f"{where}.content", "must be a string or a list of text parts")
        if role in ("system", "developer"):
            out.append(ChatMessage.system(text))
        elif role in ROLES:
            out.append(ROLES[role](text))
        else:
            raise invalid(
                f"{where}.role",
                f"role {role!r} is not supported; send user, assistant, system or developer",
            )
    return out


def _function_call(item: dict[str, Any], where: str) -> FunctionCallContent:
    """A `function_call` input item: a call the model made of one of the client's tools."""
    call_id, name = item.get("call_id"), item.get("name")
    if not isinstance(call_id, str) or not isinstance(name, str):
        raise invalid(
            where, "a function_call needs a 'call_id' and a 'name'", "missing_required_parameter"
        )
    arguments = call_arguments(item.get("arguments", "{}"), f"{where}.arguments")
    return FunctionCallContent(call_id=call_id, name=name, arguments=arguments)


def function_call_item(call: FunctionCallContent) -> dict[str, Any]:
    """A call of one of the client's tools as a `function_call` output item."""
    return {
        "id": f"fc_{call.call_id}",
        "type": "function_call",
        "status": "completed",
        "call_id": call.call_id,
        "name": call.name,
        "arguments": arguments_json(call),
    }


def _record_key(tenant: Tenant, response_id: str) -> str:
    return tenant.key(RESPONSE_PREFIX + response_id)


def response_not_found(response_id: str, param: str | None = None) -> ServeError:
    """The same 404 whether the response is missing, not kept, or someone else's."""
    error = ServeError(
        404,
        "previous_response_not_found" if param else "response_not_found",
        f"no response named {response_id!r} (responses made with store: false are not kept)",
    )
    error.param = param
    return error


async def load_record(
    host: AgentHost, tenant: Tenant, response_id: str, param: str | None = None
) -> dict[str, Any]:
    """The caller's record of response `response_id`; a 404 otherwise."""
    if not RESPONSE_ID.match(response_id):
        raise response_not_found(response_id, param)
    try:
        record = await host.store.load(_record_key(tenant, response_id))
    except SessionNotFoundError:
        raise response_not_found(response_id, param) from None
    data = record.metadata.get(RESPONSE_KEY)
    if not isinstance(data, dict):
        raise response_not_found(response_id, param)
    return data


async def save_record(host: AgentHost, tenant: Tenant, record: dict[str, Any]) -> None:
    """Keep a response's record (written once: its id is new)."""
    kept = AgentSession(id=_record_key(tenant, record["response"]["id"]))
    kept.metadata[RESPONSE_KEY] = record
    await host.store.save(kept)


def usage_object(usage: UsageDetails | None) -> dict[str, Any] | None:
    """A response's `usage`; None when the model reported none (never zeros)."""
    counted = reported(usage)
    if counted is None:
        return None
    return {
        "input_tokens": counted.input_tokens,
        "input_tokens_details": {"cached_tokens": counted.cache_read_tokens},
        "output_tokens": counted.output_tokens,
        "output_tokens_details": {"reasoning_tokens": counted.reasoning_tokens},
        "total_tokens": counted.total_tokens or counted.input_tokens + counted.output_tokens,
    }


@dataclass(kw_only=True, slots=True)
class ResponseRun:
    """One response being made: its object, its events in order, and its record."""

    host: AgentHost
    tenant: Tenant
    request: ResponsesRequest
    form: RunFormat
    tools: list[ClientTool] = field(default_factory=list)
    """The client's own tools: a call of one ends the response with a `function_call`."""
    choice: ToolChoice | None = None
    """The client's `tool_choice`."""
    id: str = field(default_factory=lambda: f"resp_{uuid.uuid4().hex}")
    message_id: str = field(default_factory=lambda: f"msg_{uuid.uuid4().hex}")
    created: int = field(default_factory=lambda: int(time.time()))
    sequence: int = 0
    session_key: str | None = None
    """The stored session the run goes on in (None with `store: false`)."""
    session_id: str | None = None
    """That session's id as its owner knows it."""
    failure: ServeError | None = None
    """Why the response failed, once it has."""
    active: ActiveRun | None = None
    """The run in the stored session, released when its stream ends however it ends."""

    def item(self, text: str, status: str) -> dict[str, Any]:
        """The answer as an output message item."""
        return {
            "id": self.message_id,
            "type": "message",
            "status": status,
            "role": "assistant",
            "content": [{"type": "output_text", "text": text, "annotations": [], "logprobs": []}],
        }

    def body(
        self,
        status: str,
        output: list[dict[str, Any]] | None = None,
        usage: UsageDetails | None = None,
        error: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        """The response object as it stands."""
        request = self.request
        return {
            "id": self.id,
            "object": "response",
            "created_at": self.created,
            "status": status,
            "model": request.model,
            "output": output or [],
            "instructions": request.instructions,
            "previous_response_id": request.previous_response_id,
            "store": request.store,
            "text": {"format": (request.text or {}).get("format") or {"type": "text"}},
            "tools": request.tools or [],
            "tool_choice": request.tool_choice or "auto",
            "parallel_tool_calls": False,
            "temperature": None,
            "top_p": None,
            "metadata": request.metadata or {},
            "incomplete_details": None,
            "error": error,
            "usage": usage_object(usage),
        }

    def event(self, kind: str, **data: Any) -> dict[str, Any]:
        """The next event of the stream, numbered."""
        out = {"type": kind, "sequence_number": self.sequence, **data}
        self.sequence += 1
        return out

    async def events(
        self, updates: AsyncIterator[AgentResponseUpdate]
    ) -> AsyncIterator[dict[str, Any]]:
        """The response's events, as OpenAI sends them: created, in progress, the
        message's item and text part opened, text deltas, each closed again, completed
        (or failed, with the error)."""
        yield self.event("response.created", response=self.body("in_progress"))
        yield self.event("response.in_progress", response=self.body("in_progress"))
        where = {"item_id": self.message_id, "output_index": 0, "content_index": 0}
        opened = False
        pieces: list[str] = []
        asking: set[str] = set()
        final: AgentResponseUpdate | None = None
        usage: UsageDetails | None = None
        joined = StreamedText()
        names = {t.name for t in self.tools}
        calls: dict[str, FunctionCallContent] = {}
        try:
            async for update in updates:
                kind = update.kind
                piece = joined.piece(update)
                content = update.content
                if piece:
                    pieces.append(piece)
                    if self.form.structured:
                        continue
                    if not opened:
                        opened = True
                        for event in self._open(where):
                            yield event
                    yield self.event(
                        "response.output_text.delta", delta=piece, logprobs=[], **where
                    )
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
                raise self._waiting(asking)
            text = "".join(pieces)
            if self.form.structured and finish is not FinishReason.TOOL_CALLS:
                text = self.form.answer(text, final.value if final is not None else None)
            if self.form.structured and text:
                opened = True
                for event in self._open(where):
                    yield event
                yield self.event("response.output_text.delta", delta=text, logprobs=[], **where)
            output: list[dict[str, Any]] = []
            if opened:
                part = {"type": "output_text", "text": text, "annotations": [], "logprobs": []}
                yield self.event("response.output_text.done", text=text, logprobs=[], **where)
                yield self.event("response.content_part.done", part=part, **where)
                output = [self.item(text, "completed")]
                yield self.event("response.output_item.done", output_index=0, item=output[0])
            if finish is FinishReason.TOOL_CALLS:
                for call in calls.values():
                    for event in self._handed_back(call, len(output)):
                        yield event
                    output.append(function_call_item(call))
            completed = self.body("completed", output, usage)
            await self._keep(completed)
        except (ServeError, RafError) as exc:
            self.failure = error_for(exc)
            error = stream_error(self.failure)["error"]
            failed = self.body("failed", error={"code": error["code"], "message": error["message"]})
            try:
                await self._keep(failed)
            except ServeError as unkept:  # the client is still told why it failed
                log.warning("a failed response was not kept: %s", unkept.message)
            yield self.event("response.failed", response=failed)
            return
        yield self.event("response.completed", response=completed)

    def _handed_back(self, call: FunctionCallContent, index: int) -> list[dict[str, Any]]:
        """The events of one call of the client's tools, as OpenAI streams a function call."""
        done = function_call_item(call)
        return [
            self.event(
                "response.output_item.added",
                output_index=index,
                item={**done, "arguments": "", "status": "in_progress"},
            ),
            self.event(
                "response.function_call_arguments.delta",
                item_id=done["id"],
                output_index=index,
                delta=done["arguments"],
            ),
            self.event(
                "response.function_call_arguments.done",
                item_id=done["id"],
                output_index=index,
                arguments=done["arguments"],
            ),
            self.event("response.output_item.done", output_index=index, item=done),
        ]

    def _open(self, where: dict[str, Any]) -> list[dict[str, Any]]:
        part = {"type": "output_text", "text": "", "annotations": [], "logprobs": []}
        return [
            self.event(
                "response.output_item.added", output_index=0, item=self.item("", "in_progress")
            ),
            self.event("response.content_part.added", part=part, **where),
        ]

    def _waiting(self, asking: set[str]) -> ServeError:
        if self.session_id is None:
            return approval_refusal(asking)
        return approval_refusal(
            asking,
            f"; the run waits in session {self.session_id!r} of agent "
            f"{self.request.model!r}, where the native API can answer it",
        )

    async def _keep(self, response: dict[str, Any]) -> None:
        """Record the response (unless `store: false`), with the turn it ends."""
        if self.session_key is None:
            return
        try:  # reading the turn fails as keeping the record does: a store that fails
            try:
                session = await self.host.store.load(self.session_key)
            except SessionNotFoundError:
                turn = -1  # the run failed before its session was kept: nothing to continue
            else:
                turn = len(session.messages)
            record = {
                "response": response,
                "agent": self.request.model,
                "session": self.session_id,
                "turn": turn,
            }
            await self._save(record)
        except SessionError as exc:
            failure = store_failure(exc)
            raise ServeError(
                failure.status, failure.code, f"the response was not kept: {failure.message}"
            ) from None

    async def _save(self, record: dict[str, Any]) -> None:
        """Write the response's record (a background response's overwrites its earlier
        states)."""
        await save_record(self.host, self.tenant, record)


async def start_updates(
    host: AgentHost,
    agent: AgentLike,
    run: ResponseRun,
    messages: list[ChatMessage],
    queueing: Callable[[str | None], dict[str, Any]] | None = None,
) -> AsyncIterator[AgentResponseUpdate]:
    """The run's updates: in the stored session (continued from the previous response's
    turn, or new), or with `store: false` in a copy nobody keeps. `queueing` gives the
    host's queueing arguments (`record`, `on_queued`, `session_name`) for the session
    the run goes on in (None: a new one)."""
    request, form, tenant = run.request, run.form, run.tenant
    history: AgentSession | None = None
    session_id: str | None = None
    previous = request.previous_response_id
    if previous is not None:
        param = "previous_response_id"
        record = await load_record(host, tenant, previous, param)
        if record.get("agent") != request.model:
            raise invalid(
                param,
                f"response {previous!r} is agent {record.get('agent')!r}'s, not "
                f"{request.model!r}'s; continue it with model {record.get('agent')!r}",
            )
        try:
            history = await host.session(request.model, str(record["session"]), tenant.owner)
        except ServeError as exc:
            if exc.status != 404:
                raise
            history = None
        if history is None or record.get("turn", -1) < 0:
            raise invalid(param, f"the conversation of response {previous!r} is not kept any more")
        turn = int(record["turn"])
        session_id = str(record["session"])
        if len(history.messages) != turn and request.store:
            # an earlier response: its conversation went on after it; continue from it in
            # a new branch, leaving the one that went on as it is
            history, session_id = await _branch(host, request.model, tenant, history, turn)
    if request.store:

        async def stream(
            session_id: str | None, seen: int | None
        ) -> tuple[ActiveRun, AsyncIterator[AgentResponseUpdate]]:
            return await host.stream(
                request.model,
                session_id,
                tenant.owner,
                messages,
                instructions=form.instructions(request.instructions),
                output_type=form.output,
                chat_options=form.chat_options(run.tools, run.choice),
                # checked again under the session's lease: of two requests continuing
                # one response, the second finds the conversation moved on
                expect_messages=seen,
                if_busy=responses_if_busy(request.if_busy),
                **({} if queueing is None else queueing(session_id)),
            )

        try:
            active, updates = await stream(
                session_id, len(history.messages) if history is not None else None
            )
        except ServeError as exc:
            if exc.code != "session_moved" or history is None:
                raise
            # another request continued the same response first: this one branches
            history, session_id = await _branch(
                host, request.model, tenant, history, len(history.messages)
            )
            active, updates = await stream(session_id, len(history.messages))
        run.active, run.session_key, run.session_id = active, active.key, active.session_id
        return updates
    session = agent.create_session()
    if history is not None:
        session.messages = list(history.messages[: int(record["turn"])])
    return agent.run_stream(
        messages, session, form.options(request.instructions, run.tools, run.choice)
    )


async def _branch(
    host: AgentHost, agent: str, tenant: Tenant, history: AgentSession, turn: int
) -> tuple[AgentSession, str]:
    """A new stored session of `agent` holding the first `turn` messages of `history`:
    the branch a response continued after its conversation went on starts from; its id
    as the owner knows it."""
    branch = await host.create_session(agent, tenant.owner)
    branch.messages = list(history.messages[:turn])
    try:
        await host.store.save(branch)
    except SessionError as exc:
        raise ServeError(503, "session_store_error", f"the branch was not kept: {exc}") from None
    return branch, str(branch.metadata[SERVE_KEY]["id"])


async def _sse(run: ResponseRun, updates: AsyncIterator[AgentResponseUpdate]) -> AsyncIterator[str]:
    async for event in run.events(updates):
        yield f"event: {event['type']}\ndata: {json_line(event)}\n\n"


class Background(Protocol):
    """Where background responses run (`raf.serve.openai.background`)."""

    async def start(
        self, agent: AgentLike, run: ResponseRun, messages: list[ChatMessage]
    ) -> Response:
        """Start `run` in the background; the answer to its request."""

    async def events(self, record: dict[str, Any], after: int) -> Response:
        """A kept background response's events after `sequence_number` `after`."""

    async def cancel(self, tenant: Tenant, record: dict[str, Any]) -> Response:
        """Stop a kept background response; the response as it stands."""


async def create_response(
    host: AgentHost, owner: str, raw: bytes, background: Background | None = None
) -> Response:
    """A Responses API request's answer: the response object, or its events as
    server-sent events when `stream` is true; with `background` true, what `background`
    answers."""
    try:
        request = parse_body(raw, ResponsesRequest)
        agent = host.agents.get(request.model)
        if agent is None:  # a 400 here, as OpenAI's Responses API answers (chat: a 404)
            raise invalid(
                "model",
                f"no model named {request.model!r}: the models are the hosted agents "
                "(GET /v1/models)",
                "model_not_found",
            )
        messages = input_messages(request.input)
        form = await request_format(agent, (request.text or {}).get("format"), "text.format")
        run = ResponseRun(
            host=host,
            tenant=Tenant(owner),
            request=request,
            form=form,
            tools=client_tools(agent, request.tools, nested=False),
            choice=tool_choice(request.tool_choice, "tool_choice", nested=False),
        )
        if request.background:
            if background is None:
                raise invalid("background", "this server runs no responses in the background")
            if not request.store:
                raise invalid(
                    "background", "background mode needs store: true (a response kept to poll)"
                )
            return await background.start(agent, run, messages)
        updates = await start_updates(host, agent, run, messages)
        if request.stream:
            return EventStream(
                _sse(run, updates),
                media_type="text/event-stream",
                headers=SSE_HEADERS,
                background=None if run.active is None else BackgroundTask(host.release, run.active),
            )
        last: dict[str, Any] = {}
        async for event in run.events(updates):
            last = event
        if run.failure is not None:
            raise run.failure
        return JSONResponse(last["response"])
    except (ServeError, RafError) as exc:
        return openai_error(error_for(exc))


@dataclass(frozen=True)
class ResponsesPlace:
    """What the Responses API's endpoints serve from: the `host` of the agents and
    sessions, and where `background` responses run (refused when None). A router's
    dependency puts it in each request's state."""

    host: AgentHost
    background: Background | None

    def attach(self, request: Request) -> None:
        """Make this the place of `request` (the router's dependency)."""
        request.state.raf_responses = self


def place_of(request: Request) -> ResponsesPlace:
    """The place the router put in this request's state."""
    return cast(ResponsesPlace, request.state.raf_responses)


async def create(request: Request) -> Response:
    """OpenAI Responses on an agent (model: the agent's name), streamed or not;
    `previous_response_id` continues a kept one."""
    place = place_of(request)
    owner = owner_of_request(request.scope)
    return await create_response(place.host, owner, await request.body(), place.background)


async def retrieve(
    response_id: str,
    request: Request,
    stream: str | None = None,
    starting_after: str | None = None,
) -> Response:
    """A response the caller made and kept (OpenAI's retrieve); with `stream=true`, a
    background response's events after `starting_after` (a `sequence_number`)."""
    place = place_of(request)
    tenant = Tenant(owner_of_request(request.scope))
    try:
        record = await load_record(place.host, tenant, response_id)
        if stream not in (None, "false", "true"):
            raise invalid("stream", f"{stream!r} is not a boolean; use true or false")
        if stream != "true":
            return JSONResponse(record["response"])
        after = stream_position(starting_after)
        if place.background is None or not record.get("run"):
            raise invalid(
                "stream",
                f"response {response_id!r} was not made with background: true; only a "
                "background response's events are kept to stream again",
            )
        return await place.background.events(record, after)
    except ServeError as exc:
        return openai_error(exc)


async def cancel(response_id: str, request: Request) -> Response:
    """Stop a background response of the caller's (OpenAI's cancel); cancelling one
    that ended answers it as it is."""
    place = place_of(request)
    tenant = Tenant(owner_of_request(request.scope))
    try:
        record = await load_record(place.host, tenant, response_id)
        if place.background is None or not record.get("run"):
            raise invalid(
                "response_id",
                f"response {response_id!r} was not made with background: true; only "
                "background responses can be cancelled",
            )
        return await place.background.cancel(tenant, record)
    except ServeError as exc:
        return openai_error(exc)


async def delete(response_id: str, request: Request) -> Response:
    """Forget a kept response of the caller's (its conversation stays)."""
    host = place_of(request).host
    tenant = Tenant(owner_of_request(request.scope))
    try:
        await load_record(host, tenant, response_id)
        await host.store.delete(_record_key(tenant, response_id))
    except ServeError as exc:
        return openai_error(exc)
    return JSONResponse({"id": response_id, "object": "response", "deleted": True})


def responses_router(host: AgentHost, background: Background | None = None) -> APIRouter:
    """The Responses API's routes over `host`; background responses run by `background`
    (refused when None)."""
    place = ResponsesPlace(host, background)
    router = APIRouter(prefix="/v1", dependencies=[Depends(place.attach)])
    router.add_api_route("/responses", create, methods=["POST"])
    router.add_api_route("/responses/{response_id}", retrieve, methods=["GET"])
    router.add_api_route("/responses/{response_id}/cancel", cancel, methods=["POST"])
    router.add_api_route("/responses/{response_id}", delete, methods=["DELETE"])
    return router
