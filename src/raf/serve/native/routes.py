"""raf's own HTTP API: agents, sessions, runs (JSON or SSE), approvals, cancel, probes."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any, cast

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import JSONResponse, StreamingResponse
from pydantic import BaseModel, ConfigDict, Field
from starlette.types import Receive, Scope, Send

from raf.core.call_approval import session_approvals
from raf.core.contents import ApprovalResponseContent, DataContent
from raf.core.errors import ApprovalError, RafError
from raf.core.messages import ChatMessage, Role
from raf.core.sessions import AgentSession
from raf.serve.catalog import describe_agent
from raf.serve.double_texting import check_if_busy
from raf.serve.errors import ServeError
from raf.serve.hosting import SERVE_KEY, AgentHost, public_id
from raf.serve.requests import STORE_UNAVAILABLE, log, parse_body
from raf.serve.runs import RunManager, public_run
from raf.serve.security import owner_of_request

RUN_ID_HEADER = "Raf-Run-Id"
"""The response header that names a native run (to re-attach to, to cancel)."""


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid")


class SessionCreate(_Body):
    """Body of `POST /agents/{agent}/sessions` (optional)."""

    session_id: str | None = Field(default=None, min_length=1, max_length=128)


class Attachment(_Body):
    """A file sent with the last message: its bytes (base64) or a link, and its type."""

    media_type: str
    data: str | None = None
    url: str | None = None


class RunRequest(_Body):
    """Body of a run: the user's messages, files that go with the last one, whether to
    stream, what to do when the session is busy (`if_busy`; the server's default when
    left out), whether to answer at once with the run (`background`), and a URL to call
    when it ends (`webhook`)."""

    messages: str | list[str | dict[str, Any]]
    attachments: list[Attachment] = Field(default_factory=list)
    stream: bool = False
    if_busy: str | None = None
    background: bool = False
    webhook: str | None = Field(default=None, min_length=1, max_length=2048)


class ApprovalAnswer(_Body):
    """One decision on a pending tool call."""

    call_id: str
    approved: bool
    reason: str | None = None


class ApprovalsRequest(_Body):
    """Body of `POST …/approvals`: the decisions, and whether to stream the resumed run."""

    responses: list[ApprovalAnswer] = Field(min_length=1)
    stream: bool = False
    if_busy: str | None = None


class PinRequest(_Body):
    """Body of `POST …/pins`: a fact to add to the conversation pinned (`text`), or the
    index of a message of the session to pin (`index`, as the session's messages list)."""

    text: str | None = Field(default=None, min_length=1)
    index: int | None = Field(default=None, ge=0)


SSE_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class EventStream(StreamingResponse):
    """A streamed response (server-sent events) that stops when the client leaves, as
    Starlette's does, watching for that with one plain asyncio task: Starlette's anyio
    task group cost more per stream than raf's own work for a run answered at once."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        stream = asyncio.ensure_future(self.stream_response(send))
        listener = asyncio.ensure_future(self.listen_for_disconnect(receive))
        try:
            await asyncio.wait((stream, listener), return_when=asyncio.FIRST_COMPLETED)
        finally:
            listener.cancel()
            stream.cancel()  # the client left (or this request is cancelled): stop the run
        await asyncio.wait((stream,))  # its cleanup (the session's release) comes first
        if not stream.cancelled():
            stream.result()  # a failure of the stream goes up, as Starlette's does
        if self.background is not None:
            await self.background()


def _attached(attachments: list[Attachment]) -> list[DataContent]:
    """The attachments as data contents, each checked (type, size, encoding) now."""
    from raf.clients.media import KNOWN_TYPES, MediaError, decode

    out: list[DataContent] = []
    for index, item in enumerate(attachments):
        if (item.data is None) == (item.url is None):
            raise ServeError(
                422, "invalid_request", f"attachments.{index}: give either data or url"
            )
        uri = item.url or f"data:{item.media_type};base64,{item.data}"
        content = DataContent(uri=uri, media_type=item.media_type)
        try:
            decode(content, KNOWN_TYPES, api="raf serve")
        except MediaError as exc:
            raise ServeError(422, "invalid_request", f"attachments.{index}: {exc}") from None
        out.append(content)
    return out


def _check_data(message: ChatMessage, index: int) -> None:
    from raf.clients.media import KNOWN_TYPES, MediaError, decode

    for content in message.contents:
        if isinstance(content, DataContent):
            try:
                decode(content, KNOWN_TYPES, api="raf serve")
            except MediaError as exc:
                raise ServeError(422, "invalid_request", f"messages.{index}: {exc}") from None


def user_messages(
    value: str | list[str | dict[str, Any]], attachments: list[Attachment] | None = None
) -> list[ChatMessage]:
    """The request's messages: strings, or message objects with the user role; the
    attachments join the last one."""
    items = [value] if isinstance(value, str) else value
    out: list[ChatMessage] = []
    for index, item in enumerate(items):
        if isinstance(item, str):
            out.append(ChatMessage.user(item))
            continue
        try:
            message = ChatMessage.from_dict(item)
        except (RafError, KeyError, TypeError, ValueError) as exc:
            raise ServeError(422, "invalid_request", f"messages.{index}: {exc}") from None
        if message.role is not Role.USER:
            raise ServeError(
                422,
                "invalid_request",
                f"messages.{index}: only user messages may be sent; the session keeps the rest",
            )
        _check_data(message, index)
        out.append(message)
    if not out:
        raise ServeError(422, "invalid_request", "messages: give at least one message")
    if attachments:
        out[-1].contents.extend(_attached(attachments))
    return out


async def session_body(session: AgentSession, host: AgentHost) -> dict[str, Any]:
    """A session's JSON form for its owner, without the server's own bookkeeping."""
    data = session.to_dict()
    data["id"] = public_id(session)
    metadata = dict(data["metadata"])
    mark = metadata.pop(SERVE_KEY, {})
    data["metadata"] = metadata
    data["agent"] = mark.get("agent")
    data["pinned"] = pinned_indices(session)
    data["approvals"] = [
        {"call_id": a.call_id, "name": a.name, "status": a.status.value}
        for a in session_approvals(session)
    ]
    run_id = await host.run_in_progress(session.id)
    data["running"] = run_id is not None
    data["run_id"] = run_id
    return data


def pinned_indices(session: AgentSession) -> list[int]:
    """Where the session's pinned messages stand in its messages."""
    return [index for index, message in enumerate(session.messages) if message.pinned]


def _message_at(session: AgentSession, index: int) -> ChatMessage:
    if not 0 <= index < len(session.messages):
        raise ServeError(
            404,
            "unknown_message",
            f"the session holds {len(session.messages)} messages; there is no message {index}",
        )
    return session.messages[index]


def pin_in(session: AgentSession, body: PinRequest) -> int:
    """Pin what `body` names in `session`: the index of the pinned message."""
    if (body.text is None) == (body.index is None):
        raise ServeError(422, "invalid_request", "give either text (a fact) or index (a message)")
    if body.index is not None:
        _message_at(session, body.index).pinned = True
        return body.index
    assert body.text is not None
    try:
        session.pin(body.text)
    except ApprovalError as exc:
        raise ServeError(409, "approvals_pending", str(exc)) from None
    except ValueError as exc:
        raise ServeError(422, "invalid_request", f"text: {exc}") from None
    return len(session.messages) - 1


async def pin_request(
    host: AgentHost, agent: str, session_id: str, owner: str, raw: bytes
) -> dict[str, Any]:
    """Pin a fact or a message in a stored session (under its lease, so every worker sees
    it): the pinned message, its index, and where every pinned message stands."""
    host.agent(agent)
    body = parse_body(raw, PinRequest)
    session, index = await host.edit_session(
        agent, session_id, owner, lambda session: pin_in(session, body)
    )
    return {
        "index": index,
        "message": session.messages[index].to_dict(),
        "pinned": pinned_indices(session),
    }


async def unpin_request(
    host: AgentHost, agent: str, session_id: str, owner: str, index: int
) -> dict[str, Any]:
    """Unpin the session's message `index` (nothing changes when it was not pinned):
    where the pinned messages that remain stand."""

    def unpin(session: AgentSession) -> None:
        _message_at(session, index).pinned = False

    session, _ = await host.edit_session(agent, session_id, owner, unpin)
    return {"pinned": pinned_indices(session)}


async def answer(
    runs: RunManager,
    agent: str,
    session_id: str | None,
    owner: str,
    messages: list[ChatMessage],
    approvals: list[ApprovalResponseContent],
    stream: bool,
    *,
    if_busy: str | None = None,
    background: bool = False,
    webhook: str | None = None,
) -> Response:
    """Run the agent in the session (a new one when `session_id` is None) as a run
    resource: the run at once (202) when `background`, else the finished run as JSON or
    its events as SSE. Its id is in the `Raf-Run-Id` header (and the first event), so a
    client that lost the connection re-attaches to it."""
    live = await runs.start(
        agent,
        session_id,
        owner,
        messages,
        approvals,
        if_busy=if_busy,
        background=background,
        webhook=webhook,
        stream=stream,
    )
    record = live.record
    headers = {RUN_ID_HEADER: record.id}
    if background:
        return JSONResponse(public_run(record), status_code=202, headers=headers)
    if stream:
        return EventStream(
            runs.follow(record.id, 0),
            media_type="text/event-stream",
            headers={**SSE_HEADERS, **headers},
        )
    if live.failure is not None:
        raise live.failure
    return JSONResponse(record.result, headers=headers)


async def run_request(
    runs: RunManager, agent: str, session_id: str | None, owner: str, raw: bytes
) -> Response:
    """A run request's answer: body `{"messages", "attachments"?, "stream"?, "if_busy"?,
    "background"?, "webhook"?}`, run in the session `session_id`, or in a new one when
    it is None."""
    runs.host.agent(agent)
    body = parse_body(raw, RunRequest)
    if_busy = None if body.if_busy is None else check_if_busy(body.if_busy)
    messages = user_messages(body.messages, body.attachments)
    return await answer(
        runs,
        agent,
        session_id,
        owner,
        messages,
        [],
        body.stream,
        if_busy=if_busy,
        background=body.background,
        webhook=body.webhook,
    )


def last_event_id(request: Request) -> int:
    """The event a re-attaching reader saw last (`Last-Event-ID`, or `?after=`); 0 for
    none. A value that is no event number is a 422."""
    raw = request.headers.get("last-event-id") or request.query_params.get("after") or "0"
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise ServeError(
            422,
            "invalid_request",
            f"Last-Event-ID {raw[:40]!r} is not an event id (ids are 1, 2, …)",
        )
    return value


@dataclass(frozen=True)
class NativePlace:
    """What the native API's endpoints serve from: the `host` of agents and sessions and
    the `runs` it keeps. A router's dependency puts it in each request's state."""

    host: AgentHost
    runs: RunManager

    def attach(self, request: Request) -> None:
        """Make this the place of `request` (the router's dependency)."""
        request.state.raf_native = self


def host_of(request: Request) -> AgentHost:
    """The host the router serves this request from."""
    return cast(NativePlace, request.state.raf_native).host


def runs_of(request: Request) -> RunManager:
    """The runs of the host the router serves this request from."""
    return cast(NativePlace, request.state.raf_native).runs


def caller_of(request: Request) -> str:
    """The caller, as the security middleware named it."""
    return owner_of_request(request.scope)


async def health() -> dict[str, Any]:
    """Liveness: the process answers."""
    return {"status": "ok"}


async def ready(request: Request) -> Response:
    """Readiness: the session store answers within the store timeout (503 while it
    does not, saying so without naming the store; the server's log says why)."""
    try:
        await host_of(request).check_store()
    except Exception as exc:
        log.warning("not ready: the session store failed: %s: %s", type(exc).__name__, exc)
        return JSONResponse(
            {
                "status": "unavailable",
                "error": {"code": "store_unavailable", "message": STORE_UNAVAILABLE},
            },
            status_code=503,
        )
    return JSONResponse({"status": "ready", "agents": len(host_of(request).agents)})


async def list_agents(request: Request) -> dict[str, Any]:
    """The agents served: name, description, tools and context providers."""
    return {"agents": [describe_agent(a) for a in host_of(request).agents.values()]}


async def get_agent(agent: str, request: Request) -> dict[str, Any]:
    """One agent's description."""
    return describe_agent(host_of(request).agent(agent))


async def create_session(agent: str, request: Request) -> dict[str, Any]:
    """Start a session; body `{"session_id"?}` to choose its id."""
    host_of(request).agent(agent)
    body = parse_body(await request.body(), SessionCreate, empty_ok=True)
    session = await host_of(request).create_session(agent, caller_of(request), body.session_id)
    return await session_body(session, host_of(request))


async def get_session(agent: str, session_id: str, request: Request) -> dict[str, Any]:
    """A session: its messages and its approvals with their status."""
    return await session_body(
        await host_of(request).session(agent, session_id, caller_of(request)),
        host_of(request),
    )


async def delete_session(agent: str, session_id: str, request: Request) -> Response:
    """Delete a session."""
    await host_of(request).delete_session(agent, session_id, caller_of(request))
    return Response(status_code=204)


async def run(agent: str, session_id: str, request: Request) -> Response:
    """Run the agent in a session; body `{"messages", "attachments"?, "stream"?}`, answer
    JSON, or server-sent events when `stream` is true."""
    return await run_request(
        runs_of(request),
        agent,
        session_id,
        caller_of(request),
        await request.body(),
    )


async def run_new(agent: str, request: Request) -> Response:
    """Run the agent in a new session; body and answer as for a session's runs."""
    return await run_request(
        runs_of(request), agent, None, caller_of(request), await request.body()
    )


async def get_run(agent: str, run_id: str, request: Request) -> dict[str, Any]:
    """A run: its state (queued, running, waiting, done, failed, cancelled), its
    result or error, and its webhook's attempts."""
    return public_run(await runs_of(request).get(agent, run_id, caller_of(request)))


async def run_events(agent: str, run_id: str, request: Request) -> Response:
    """The run's events as SSE, from the start or after `Last-Event-ID`, until it
    ends (from any worker)."""
    after = last_event_id(request)
    await runs_of(request).events_from(agent, run_id, caller_of(request), after)
    return EventStream(
        runs_of(request).follow(run_id, after),
        media_type="text/event-stream",
        headers={**SSE_HEADERS, RUN_ID_HEADER: run_id},
    )


async def cancel_run(agent: str, run_id: str, request: Request) -> dict[str, Any]:
    """Ask the run to stop (it leaves the queue, or stops where it is)."""
    return public_run(await runs_of(request).cancel(agent, run_id, caller_of(request)))


async def list_runs(agent: str, session_id: str, request: Request) -> dict[str, Any]:
    """The session's runs in arrival order."""
    found = await runs_of(request).session_runs(agent, session_id, caller_of(request))
    return {"object": "list", "data": [public_run(r) for r in found]}


async def approvals(agent: str, session_id: str, request: Request) -> Response:
    """Answer the session's pending approvals, body `{"responses": [{"call_id",
    "approved", "reason"?}], "stream"?}`; the paused run goes on."""
    host_of(request).agent(agent)
    body = parse_body(await request.body(), ApprovalsRequest)
    if_busy = None if body.if_busy is None else check_if_busy(body.if_busy)
    decisions = [
        ApprovalResponseContent(call_id=a.call_id, approved=a.approved, reason=a.reason)
        for a in body.responses
    ]
    return await answer(
        runs_of(request),
        agent,
        session_id,
        caller_of(request),
        [],
        decisions,
        body.stream,
        if_busy=if_busy,
    )


async def pin(agent: str, session_id: str, request: Request) -> dict[str, Any]:
    """Pin in a session, body `{"text"}` (a fact, added to the conversation) or
    `{"index"}` (one of its messages): compression keeps it word for word."""
    return await pin_request(
        host_of(request),
        agent,
        session_id,
        caller_of(request),
        await request.body(),
    )


async def unpin(agent: str, session_id: str, index: int, request: Request) -> dict[str, Any]:
    """Unpin the session's message `index`."""
    return await unpin_request(host_of(request), agent, session_id, caller_of(request), index)


async def cancel(agent: str, session_id: str, request: Request) -> dict[str, Any]:
    """Cancel the session's running run."""
    await host_of(request).session(agent, session_id, caller_of(request))
    run_id = await host_of(request).cancel(agent, session_id, caller_of(request))
    return {"cancelled": True, "run_id": run_id, "session_id": session_id}


def native_router(host: AgentHost, runs: RunManager | None = None) -> APIRouter:
    """The routes of the native API over `host`; its runs kept by `runs` (a
    `RunManager` with the default retention and no webhooks when None)."""
    place = NativePlace(host, runs if runs is not None else RunManager(host))
    router = APIRouter(dependencies=[Depends(place.attach)])
    router.add_api_route("/health", health, methods=["GET"])
    router.add_api_route("/ready", ready, methods=["GET"])
    router.add_api_route("/agents", list_agents, methods=["GET"])
    router.add_api_route("/agents/{agent}", get_agent, methods=["GET"])
    router.add_api_route(
        "/agents/{agent}/sessions", create_session, methods=["POST"], status_code=201
    )
    router.add_api_route("/agents/{agent}/sessions/{session_id}", get_session, methods=["GET"])
    router.add_api_route(
        "/agents/{agent}/sessions/{session_id}", delete_session, methods=["DELETE"], status_code=204
    )
    router.add_api_route("/agents/{agent}/sessions/{session_id}/runs", run, methods=["POST"])
    router.add_api_route("/agents/{agent}/runs", run_new, methods=["POST"])
    router.add_api_route("/agents/{agent}/runs/{run_id}", get_run, methods=["GET"])
    router.add_api_route("/agents/{agent}/runs/{run_id}/events", run_events, methods=["GET"])
    router.add_api_route(
        "/agents/{agent}/runs/{run_id}/cancel", cancel_run, methods=["POST"], status_code=202
    )
    router.add_api_route("/agents/{agent}/sessions/{session_id}/runs", list_runs, methods=["GET"])
    router.add_api_route(
        "/agents/{agent}/sessions/{session_id}/approvals", approvals, methods=["POST"]
    )
    router.add_api_route(
        "/agents/{agent}/sessions/{session_id}/pins", pin, methods=["POST"], status_code=201
    )
    router.add_api_route(
        "/agents/{agent}/sessions/{session_id}/pins/{index}", unpin, methods=["DELETE"]
    )
    router.add_api_route(
        "/agents/{agent}/sessions/{session_id}/cancel", cancel, methods=["POST"], status_code=202
    )
    return router
