"""Hosted agents over A2A (the a2a-sdk package): an agent card and JSON-RPC per agent.

Agent `NAME` answers JSON-RPC at `/a2a/NAME` (and `/a2a/NAME/`: no redirect), with its
card at `/a2a/NAME/.well-known/agent-card.json`; the first agent's card is also at the
root `/.well-known/agent-card.json`. One endpoint speaks both protocol versions, through
the SDK's compatibility layer: a request with `A2A-Version: 1.0` uses the 1.0 methods
(`SendMessage`, `GetTask`, ...), one without the header is a 0.3 client's
(`message/send`, `tasks/get`, ...); both reach the same tasks and sessions.

The card is 1.0's, with only 1.0's fields, listing the endpoint for each version; a 0.3
client gets 0.3's card (`url`, `protocolVersion`, 0.3's security shapes) when it asks
with `A2A-Version: 0.3`, or at the older path `.well-known/agent.json` beside each
agent-card path (neither SDK sends a version header for the card, and a 1.0 reader
refuses a card with 0.3's keys). Cards carry `Cache-Control`, `ETag` and
`Last-Modified`, and a matching `If-None-Match` is answered 304.

An A2A context is a raf session owned by the caller's token, and its tasks are kept in
the server's session store (`raf.serve.a2a.tasks`), so any worker sharing the store
answers for them. A run that stops for approval leaves its
task `input-required` with the pending calls as a data part; a message with a data part
`{"approvals": [{"call_id", "approved", "reason"?}]}` in the same context answers them.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import time
import uuid
from dataclasses import dataclass
from email.utils import formatdate
from functools import partial
from typing import TYPE_CHECKING, Any, cast

from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from raf.core import outbound
from raf.core.agent_like import AgentLike, own_tools
from raf.core.contents import ApprovalResponseContent, content_to_dict
from raf.core.errors import RafError, SessionError
from raf.core.messages import ChatMessage
from raf.core.responses import AnswerCheck, FinishReason, UpdateKind
from raf.serve.a2a.push import push_sender, push_url_check, stored_push_configs
from raf.serve.a2a.requests import (
    VERSION_HEADER,
    RequestProblem,
    check_request,
    jsonrpc_error_body,
    valid_id,
)
from raf.serve.a2a.tasks import stored_tasks
from raf.serve.answer_text import StreamedText
from raf.serve.double_texting import ENQUEUE
from raf.serve.errors import ServeError, require_extra
from raf.serve.hosting import AgentHost
from raf.serve.requests import error_for, store_failure
from raf.serve.security import AGENT_CARD, OLD_AGENT_CARD, ServeSecurity, owner_of_request
from raf.serve.webhooks import RETRY_DELAYS
from raf.stores.leases import run_of
from raf.stores.runs import CANCELLED, DONE, FAILED, QUEUED, WAITING, RunRecord

if TYPE_CHECKING:
    from a2a.server.agent_execution import AgentExecutor, RequestContext
    from a2a.server.context import ServerCallContext
    from a2a.server.events import EventQueue
    from a2a.server.routes import DefaultServerCallContextBuilder
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
    from a2a.types import AgentCard
    from fastapi import FastAPI
    from starlette.requests import Request

    from raf.core.outbound import OutboundPolicy


PROTOCOL_VERSIONS = ("1.0", "0.3")
"""The A2A protocol versions every agent's endpoint answers, the preferred one first."""

STREAMING_METHODS = frozenset(
    {"SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe"}
)
"""Methods whose answer is a stream: their errors come as one server-sent event too."""

CARD_MAX_AGE = 300
"""Seconds a client may keep a card before asking again (with its ETag)."""

TASK_OF_RUN = "a2a_task"
"""Key in a run record's `extra` naming the A2A task the run works on."""

log = logging.getLogger("raf.serve")


def card_json(card: AgentCard, version: str) -> dict[str, Any]:
    """`card` as version `version` ("1.0" or "0.3") writes it: 1.0's fields alone, or
    0.3's card (its interface, `url`, `protocolVersion` and security shapes)."""
    from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]

    if version == "1.0":
        data: dict[str, Any] = MessageToDict(card)
        return data
    from a2a.compat.v0_3.conversions import to_compat_agent_card

    old: dict[str, Any] = to_compat_agent_card(card).model_dump(
        mode="json", by_alias=True, exclude_none=True
    )
    if not old.get("supportsAuthenticatedExtendedCard"):
        old.pop("supportsAuthenticatedExtendedCard", None)
    return old


def card_version(header: str | None, path: str) -> str:
    """Which card a request asks for: 0.3's at the older path or with `A2A-Version: 0.3`,
    1.0's otherwise (a card request without the header is any client's)."""
    if path.endswith(OLD_AGENT_CARD):
        return "0.3"
    given = (header or "").strip()
    return "0.3" if given.startswith("0.") else "1.0"


def etag_matches(header: str | None, etag: str) -> bool:
    """Whether an `If-None-Match` header names `etag` (weakly compared) or is `*`."""
    if not header:
        return False
    tags = [t.strip().removeprefix("W/") for t in header.split(",")]
    return "*" in tags or etag in tags


def agent_card(agent: AgentLike, url: str, security: ServeSecurity) -> AgentCard:
    """The A2A card of one agent at `url`, declaring bearer auth when tokens are on."""
    from a2a.types import (
        AgentCapabilities,
        AgentCard,
        AgentInterface,
        AgentSkill,
        HTTPAuthSecurityScheme,
        SecurityRequirement,
        SecurityScheme,
        StringList,
    )

    card = AgentCard(
        name=agent.name,
        description=agent.description or f"The raf agent {agent.name!r}.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=version)
            for version in PROTOCOL_VERSIONS
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=True),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[
            AgentSkill(
                id=agent.name,
                name=agent.name,
                description=agent.description or f"Ask {agent.name}.",
                tags=[t.name for t in own_tools(agent)] or ["chat"],
            )
        ],
    )
    if security.tokens:
        card.security_schemes["bearer"].CopyFrom(
            SecurityScheme(http_auth_security_scheme=HTTPAuthSecurityScheme(scheme="Bearer"))
        )
        card.security_requirements.append(
            SecurityRequirement(schemes={"bearer": StringList(list=[])})
        )
    return card


def _approvals(data_parts: list[Any]) -> list[ApprovalResponseContent]:
    """Approval answers carried in a message's data parts."""
    answers: list[ApprovalResponseContent] = []
    for data in data_parts:
        if not isinstance(data, dict) or "approvals" not in data:
            continue
        items = data["approvals"]
        if not isinstance(items, list):
            raise ServeError(400, "invalid_request", "'approvals' must be a list")
        for item in items:
            if not isinstance(item, dict) or not isinstance(item.get("call_id"), str):
                raise ServeError(400, "invalid_request", "each approval needs a 'call_id'")
            answers.append(
                ApprovalResponseContent(
                    call_id=item["call_id"],
                    approved=bool(item.get("approved")),
                    reason=item.get("reason"),
                )
            )
    return answers


async def _end_record(
    host: AgentHost, record: RunRecord | None, state: str, error: dict[str, Any] | None = None
) -> None:
    """Record how a task's run ended (a run refused before it was recorded keeps none)."""
    if record is None or not record.seq or record.ended_at is not None:
        return
    record.state = state
    record.error = error
    record.ended_at = record.updated_at = time.time()
    try:
        await host.run_records.save_run(record)
    except SessionError as exc:
        log.warning("could not record the end of run %s: %s", record.id, exc)


async def cancel_task(host: AgentHost, context_id: str, owner: str, task_id: str) -> None:
    """Stop task `task_id`'s run in whichever process has it: a run waiting its turn
    leaves the context's queue, the running one is cancelled (another task's run in the
    same context is left alone). Nothing when the task has no run (it ended)."""
    try:
        key = host._key(context_id, owner)
        runs = await host.run_records.session_runs(key, active=True)
        mine = [r for r in runs if r.extra.get(TASK_OF_RUN) == task_id and r.ended_at is None]
        for record in mine:
            await host.run_records.cancel_run(record.id, "cancelled over A2A")
            if record.state == QUEUED:
                continue  # its queue reads the request to stop
            active = host.runs.get(key)
            if active is not None and active.run_id == record.id:
                active.token.cancel("cancelled over A2A")
                continue
            lease = await host.leases.read_lease(key)
            if lease is not None and run_of(lease.holder) == record.id:
                await host.leases.cancel_lease(key, "cancelled over A2A")
    except SessionError as exc:
        raise store_failure(exc) from None
    except ServeError as exc:
        if exc.status != 404:
            raise


def make_executor(host: AgentHost, name: str) -> AgentExecutor:
    """The a2a-sdk executor that runs agent `name` through `host`."""
    from a2a.helpers import (
        get_data_parts,
        new_data_part,
        new_task,
        new_text_message,
        new_text_part,
    )
    from a2a.server.agent_execution import AgentExecutor
    from a2a.server.tasks import TaskUpdater
    from a2a.types import TaskState

    class RafAgentExecutor(AgentExecutor):
        """Runs one A2A request as one raf run in the context's session."""

        async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
            made: list[RunRecord] = []
            try:
                await self._execute(context, event_queue, made)
            except asyncio.CancelledError:  # the SDK stops a cancelled task's executor
                if made:
                    await _end_record(host, made[0], CANCELLED)
                raise

        async def _execute(
            self, context: RequestContext, event_queue: EventQueue, made: list[RunRecord]
        ) -> None:
            """Run the task; its run record is put in `made` once there is one."""
            owner = context.call_context.user.user_name
            task_id = context.task_id or ""
            context_id = context.context_id or ""
            updater = TaskUpdater(event_queue, task_id, context_id)
            if context.current_task is None:
                history = [context.message] if context.message else []
                await event_queue.enqueue_event(
                    new_task(task_id, context_id, TaskState.TASK_STATE_SUBMITTED, history=history)
                )

            def say(text: str) -> Any:
                return new_text_message(text, context_id=context_id, task_id=task_id)

            record: RunRecord | None = None
            try:
                await self._session(owner, context_id)
                message = context.message
                approvals = _approvals(get_data_parts(list(message.parts)) if message else [])
                text = "" if approvals else context.get_user_input()
                messages = [ChatMessage.user(text)] if text else []
                record = RunRecord(
                    id=uuid.uuid4().hex,
                    session=host._key(context_id, owner),
                    agent=name,
                    owner=owner,
                    session_name=context_id,
                    if_busy=ENQUEUE,
                    extra={TASK_OF_RUN: task_id},
                )
                made.append(record)
                # a task in a context with a run in progress waits its turn (submitted)
                _active, updates = await host.stream(
                    name, context_id, owner, messages, approvals, if_busy=ENQUEUE, record=record
                )
                await updater.start_work()
                answer: list[str] = []
                finish: FinishReason | None = None
                check = AnswerCheck()
                joined = StreamedText()  # one text per answer, as every surface gives it
                async for update in updates:
                    check.see(update)
                    answer.append(joined.piece(update))
                    if update.kind is UpdateKind.FINISHED:
                        finish = update.finish_reason
            except (ServeError, RafError) as exc:
                error = error_for(exc)
                await _end_record(host, record, FAILED, error.body()["error"])
                if error.code == "run_cancelled":  # cancelled while it waited its turn
                    await updater.cancel(say(error.message))
                else:
                    await updater.failed(say(f"{error.code}: {error.message}"))
                return
            reply = "".join(answer)
            if reply:
                await updater.add_artifact([new_text_part(reply)], name="answer")
            problem = check.problem
            if problem is not None:  # the task failed: no whole answer to give
                await _end_record(host, record, FAILED, problem.to_dict())
                await updater.failed(say(f"{problem.code}: {problem.message}"))
            elif finish is FinishReason.CANCELLED:
                await _end_record(host, record, CANCELLED)
                await updater.cancel(say("the run was cancelled"))
            elif finish is FinishReason.AWAITING_APPROVAL:
                await _end_record(host, record, WAITING)
                session = await host.session(name, context_id, owner)
                pending = [content_to_dict(p) for p in session.pending_approvals]
                ask = say(
                    "waiting for approval of "
                    + ", ".join(f"{p['name']} ({p['call_id']})" for p in pending)
                )
                ask.parts.append(new_data_part({"pending_approvals": pending}))
                await updater.requires_input(ask)
            else:
                await _end_record(host, record, DONE)
                await updater.complete(say(reply))

        async def _session(self, owner: str, context_id: str) -> None:
            """The context's session, created for this owner on first use (by whichever
            of two tasks sent to a new context at once comes first)."""
            try:
                await host.session(name, context_id, owner)
            except ServeError as exc:
                if exc.status != 404:
                    raise
                try:
                    await host.create_session(name, owner, context_id)
                except ServeError as made:
                    if made.code != "session_exists":
                        raise

        async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
            owner = context.call_context.user.user_name
            context_id = context.context_id or ""
            await cancel_task(host, context_id, owner, context.task_id or "")
            updater = TaskUpdater(event_queue, context.task_id or "", context_id)
            await updater.cancel()

    return RafAgentExecutor()


def owner_context_builder(security: ServeSecurity) -> DefaultServerCallContextBuilder:
    """The SDK's call-context builder that names the caller as the security middleware
    identified it (a hash of its token), authenticated when `security` has tokens."""
    from a2a.auth.user import User
    from a2a.server.routes import DefaultServerCallContextBuilder

    class Owner(User):
        """The caller as the security middleware identified it (a hash of its token)."""

        def __init__(self, owner: str) -> None:
            self.owner = owner

        @property
        def is_authenticated(self) -> bool:
            return bool(security.tokens)

        @property
        def user_name(self) -> str:
            return self.owner

    class OwnerContextBuilder(DefaultServerCallContextBuilder):
        def build(self, request: Request) -> ServerCallContext:
            context = super().build(request)
            context.user = Owner(owner_of_request(request.scope))
            return context

    return OwnerContextBuilder()


@dataclass(frozen=True)
class A2aPlace:
    """What the A2A endpoints serve from: the `host` of the agents, the `public_url`
    their cards give (the address a request came to when None), the server's `security`
    (whether cards declare bearer auth), when the server `started` (the cards'
    `Last-Modified`: they change only when it restarts) and each agent's JSON-RPC
    `dispatchers`, by name. `mount_a2a` keeps it in the app's state."""

    host: AgentHost
    public_url: str | None
    security: ServeSecurity
    started: str
    dispatchers: dict[str, JsonRpcDispatcher]


def place_of(request: Request) -> A2aPlace:
    """The place `mount_a2a` kept in the state of the app serving this request."""
    return cast(A2aPlace, request.app.state.raf_a2a)


def as_event(payload: dict[str, Any]) -> Response:
    """A JSON-RPC answer as the one event of a stream."""
    event = f"data: {json.dumps(payload, separators=(',', ':'))}\n\n"
    return Response(event, media_type="text/event-stream", headers={"Cache-Control": "no-store"})


async def card(name: str, request: Request) -> Response:
    """Agent `name`'s card, in the version the request asks for (304 when its
    `If-None-Match` names the card's ETag)."""
    place = place_of(request)
    agent = place.host.agents[name]
    base = (place.public_url or str(request.base_url)).rstrip("/")
    made = agent_card(agent, f"{base}/a2a/{agent.name}", place.security)
    version = card_version(request.headers.get(VERSION_HEADER), request.url.path)
    body = json.dumps(card_json(made, version), separators=(",", ":")).encode()
    etag = f'"{hashlib.sha256(body).hexdigest()[:32]}"'
    headers = {
        "Cache-Control": f"public, max-age={CARD_MAX_AGE}",
        "ETag": etag,
        "Last-Modified": place.started,
        "Vary": VERSION_HEADER,
    }
    if etag_matches(request.headers.get("if-none-match"), etag):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


async def rpc(name: str, request: Request) -> Response:
    """JSON-RPC to agent `name` for both protocol versions, each request checked before
    the SDK's dispatcher answers it (which reads the body again from the request's
    cache); another method than POST gets a JSON-RPC error, not a plain 405."""
    if request.method != "POST":
        message = f"JSON-RPC is sent with POST, not {request.method}"
        refused = jsonrpc_error_body(405, "method_not_allowed", message)
        return JSONResponse(refused, status_code=405, headers={"Allow": "POST"})
    try:
        body = await request.json()
    except ValueError:
        body = None  # the dispatcher answers a parse error in the protocol's words
    method = body.get("method") if isinstance(body, dict) else None
    streamed = method in STREAMING_METHODS  # the client reads server-sent events
    try:
        check_request(body, request.headers.get(VERSION_HEADER))
    except RequestProblem as problem:
        error = {"code": problem.code, "message": problem.message}
        refused = {"jsonrpc": "2.0", "id": valid_id(body), "error": error}
        return as_event(refused) if streamed else JSONResponse(refused)
    answer = await place_of(request).dispatchers[name].handle_requests(request)
    if streamed and answer.media_type == "application/json":  # an error, not a stream
        return as_event(json.loads(bytes(answer.body)))
    return answer


RPC_METHODS = ["POST", "GET", "HEAD", "PUT", "PATCH", "DELETE"]
"""The methods an RPC route answers: all but POST with a JSON-RPC error."""


def mount_a2a(
    app: FastAPI,
    host: AgentHost,
    *,
    public_url: str | None,
    security: ServeSecurity,
    push_policy: OutboundPolicy | None = None,
    push_retry_delays: tuple[float, ...] = RETRY_DELAYS,
) -> None:
    """Add every hosted agent's A2A card and JSON-RPC routes (protocol 1.0 and 0.3) to
    `app`; cards give `public_url`, or the address the request came to when it is None.
    Push notifications go where `push_policy` lets them (the webhooks' outbound guard;
    no private or loopback address when None), a failed one retried after each of
    `push_retry_delays` seconds (the webhooks' schedule)."""
    require_extra("a2a", "serving agents over A2A")
    from a2a.server.request_handlers import DefaultRequestHandler
    from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher

    tasks = stored_tasks(host.store)  # every worker sharing the store knows every task
    if push_policy is None:
        push_policy = outbound.policy(who="push notification", allow_private=False)
    configs = stored_push_configs(host.store)
    sender = push_sender(configs, push_policy, push_retry_delays)
    context_builder = owner_context_builder(security)
    dispatchers: dict[str, JsonRpcDispatcher] = {}
    routes: list[Route] = []
    for index, (name, agent) in enumerate(host.agents.items()):
        handler = DefaultRequestHandler(
            agent_executor=make_executor(host, name),
            task_store=tasks,
            push_config_store=configs,
            push_sender=sender,
            push_url_validator=push_url_check(push_policy),
            agent_card=agent_card(agent, f"{public_url or ''}/a2a/{name}", security),
        )
        dispatchers[name] = JsonRpcDispatcher(
            request_handler=handler, context_builder=context_builder, enable_v0_3_compat=True
        )
        cards = [f"/a2a/{name}{path}" for path in (AGENT_CARD, OLD_AGENT_CARD)]
        if index == 0:
            cards += [AGENT_CARD, OLD_AGENT_CARD]
        routes += [Route(path, partial(card, name), methods=["GET"], name="card") for path in cards]
        # both spellings of the endpoint answer: a redirect's empty body is no JSON-RPC
        routes += [
            Route(path, partial(rpc, name), methods=RPC_METHODS, name="rpc")
            for path in (f"/a2a/{name}", f"/a2a/{name}/")
        ]
    started = formatdate(usegmt=True)  # the cards change only when the server restarts
    app.state.raf_a2a = A2aPlace(host, public_url, security, started, dispatchers)
    app.router.routes.extend(routes)
