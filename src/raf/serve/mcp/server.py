"""A raf agent as an MCP server (stdio or streamable HTTP) on the official SDK.

The server offers one tool, `ask(message, session_id?)`, that runs the agent; with
`expose_tools` it also offers the agent's tools: its own and those its context providers
add at run time (workspace file and shell tools, skills, ...: each provider's
`on_invoking` runs once for a listing session before the server answers), except those
that need a human's approval for every call (a remote caller must not bypass that). A
tool that asks only for some calls (a workspace under the `approve` policy asks for paths
outside it) is offered, and such a call is refused with the reason, as the workspace's
rules decide it in a run: allowed calls run, denied ones fail. Sessions are the
`AgentHost`'s, as on every surface: kept in its store, one run at a time in each (an
`ask` holds the session's lease), scoped to their owner. Over stdio (one client) any
`session_id` names one; over HTTP, where many clients share the server, the owner is the
bearer token's identity as `raf serve`'s guard finds it, and the server issues each new
session an unguessable id and continues only sessions it issued to that owner, so no
client reaches another's conversation. While `ask` runs, the
client hears progress and log messages (`mcp_report`); a call that needs approval is
asked of the client's user as an elicitation when the client supports it, and denied
otherwise (the agent is told why), leaving the session ready for the next `ask`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import secrets
import warnings
from collections import OrderedDict
from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from raf.core.agent_like import own_providers, own_tools
from raf.core.call_approval import answerable_requests
from raf.core.contents import ApprovalRequestContent
from raf.core.errors import ConfigurationError, SessionError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions, ToolApprovalResponse
from raf.core.responses import ChatResponse, FinishReason, ResponseFolder
from raf.core.sessions import AgentSession
from raf.core.tools import Tool, ToolContext, approval_reason
from raf.serve.errors import ServeError
from raf.serve.hosting import SESSION_ID, ActiveRun, AgentHost
from raf.serve.limits import ServeLimits
from raf.serve.mcp.report import (
    LEVELS,
    LogLevels,
    RunReporter,
    approval_input_request,
    decision_from,
)
from raf.serve.model_errors import is_model_failure, model_error
from raf.serve.requests import store_failure
from raf.serve.security import OWNER_KEY
from raf.serve.tenancy import ANONYMOUS, Tenant
from raf.tools.mcp.client import _import_mcp

if TYPE_CHECKING:
    import mcp_types

    from raf.core.agent_like import AgentLike

log = logging.getLogger("raf.serve.mcp")

ASK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "message": {"type": "string", "description": "what to ask the agent"},
        "session_id": {
            "type": "string",
            "description": "continue the conversation kept under this id (optional)",
        },
    },
    "required": ["message"],
}


def _failure(exc: Exception) -> str:
    """A failure as the MCP client reads it: a model error names only its provider and
    status (its URL and body go to the server's log)."""
    if is_model_failure(exc):
        return f"model_error: {model_error(exc).message}"
    if isinstance(exc, SessionError):  # told as every surface tells it: no address
        failure = store_failure(exc)
        return f"{failure.code}: {failure.message}"
    return f"{type(exc).__name__}: {exc}"


def _text_result(text: str, *, error: bool = False, structured: Any = None) -> Any:
    import mcp_types

    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        structured_content=structured,
        is_error=error,
    )


class AgentMcpServer:
    """The MCP server for one agent, on an `AgentHost`, run over stdio or HTTP. Its
    handlers are the module-level `list_tools`, `call_tool` and `set_logging_level`,
    which find the server in the SDK's lifespan context."""

    def __init__(
        self,
        agent: AgentLike,
        *,
        expose_tools: bool = False,
        ask_tool: str = "ask",
        host: AgentHost | None = None,
    ):
        _import_mcp()
        if host is None:
            host = AgentHost([agent])
        elif host.agents.get(agent.name) is not agent:
            raise ConfigurationError(
                f"the host given to the MCP server does not serve the agent {agent.name!r}"
            )
        self.host = host
        """Where sessions are kept, leased and scoped to their owners: the host every
        surface runs on."""
        self.agent = agent
        self.ask_tool = ask_tool
        self.issue_session_ids = False
        """True over HTTP: new sessions get random ids and unknown ids are refused."""
        self.tools: dict[str, Tool] = {}
        self.left_out: dict[str, str] = {}
        """With `expose_tools`: the agent's tools not exposed, and why."""
        self.log_levels = LogLevels()
        self.paused: OrderedDict[str, _Paused] = OrderedDict()
        """Asks waiting for a client's answers, by the token sent in `request_state`."""
        self.expose_tools = expose_tools
        self._listed = False
        """Whether the providers' run-time tools were asked for (once, before serving)."""
        self._tool_session: AgentSession | None = None
        """The session the exposed tools are listed and called in."""
        if expose_tools:
            for tool in own_tools(agent):
                self._expose(tool)
            for provider in own_providers(agent):
                for declared in _provider_tools(provider):
                    if isinstance(declared, Tool):
                        self._expose(declared)
        self.server = self._build()

    def _expose(self, tool: Tool) -> None:
        """Offer `tool` unless it asks a person before every call, or its name is taken."""
        if tool.name in self.tools or tool.name in self.left_out:
            return
        if tool.name == self.ask_tool:
            raise ConfigurationError(
                f"the agent has a tool named {self.ask_tool!r}, which the MCP server "
                "uses for asking the agent: rename one of them"
            )
        if tool.kind == "hosted":
            self.left_out[tool.name] = "a hosted tool: the model's provider runs it, not raf"
            return
        if _asks_every_call(tool):
            self.left_out[tool.name] = "needs approval, which an MCP caller cannot give"
            return
        self.tools[tool.name] = tool

    async def list_run_time_tools(self) -> None:
        """With `expose_tools`: add the tools the context providers give a run, by running
        each provider's `on_invoking` once for a listing session (as a run's first step
        does); done once, before the server answers. A provider that fails here is named
        in `left_out` with its error, and the server goes on without its tools."""
        if not self.expose_tools or self._listed:
            return
        self._listed = True
        session = self.tools_session()
        for provider in own_providers(self.agent):
            try:
                added = await provider.on_invoking(self.agent, session, [], AgentRunOptions())
            except Exception as exc:
                self.left_out[f"(tools of the {provider.kind!r} provider {provider.name!r})"] = (
                    f"listing them failed: {type(exc).__name__}: {exc}"
                )
                continue
            for tool in added.tools:
                self._expose(tool)

    def tools_session(self) -> AgentSession:
        """The session the exposed tools are listed and called in (no conversation)."""
        if self._tool_session is None:
            self._tool_session = self.agent.create_session(None)
        return self._tool_session

    def _build(self) -> Any:
        from mcp.server.lowlevel import Server
        from mcp.shared.exceptions import MCPDeprecationWarning

        with warnings.catch_warnings():
            # Logging is deprecated in the newest protocol revision but clients of the
            # earlier ones still ask for it; raf keeps offering it, so the SDK's warning
            # would only alarm the person running `raf mcp serve`.
            warnings.filterwarnings("ignore", category=MCPDeprecationWarning)
            return Server(
                self.agent.name,
                version="raf",
                instructions=self.agent.description or None,
                lifespan=functools.partial(_serving, self),
                on_list_tools=list_tools,
                on_call_tool=call_tool,
                on_set_logging_level=set_logging_level,
            )

    def tool_specs(self) -> list[mcp_types.Tool]:
        """The tools offered: `ask`, then the exposed ones."""
        import mcp_types

        description = self.agent.description or f"Ask the raf agent {self.agent.name!r}."
        specs = [
            mcp_types.Tool(name=self.ask_tool, description=description, input_schema=ASK_SCHEMA)
        ]
        for tool in self.tools.values():
            specs.append(
                mcp_types.Tool(
                    name=tool.name, description=tool.description, input_schema=tool.parameters
                )
            )
        return specs

    async def serve_stdio(self) -> None:
        from mcp.server.stdio import stdio_server

        await self.list_run_time_tools()
        async with stdio_server() as (read, write):
            await self.server.run(read, write, self.server.create_initialization_options())

    async def serve_http(
        self,
        *,
        host: str = "127.0.0.1",
        port: int = 8000,
        token: str | None = None,
        allowed_hosts: Iterable[str] = (),
        ready: Callable[[str], None] | None = None,
        tokens: Sequence[str] = (),
        allowed_origins: Iterable[str] = (),
        limits: ServeLimits | None = None,
    ) -> None:
        """Streamable HTTP at http://host:port/mcp until cancelled, behind `raf serve`'s
        guard (`SecurityMiddleware`): beyond loopback a bearer `token` (or several,
        `tokens`, each seeing only the sessions issued to it) is required; Host and
        Origin are checked against loopback, `host`, `allowed_hosts` and
        `allowed_origins` whatever the address. `ready` is called with the endpoint's URL
        once the socket listens (port 0 picks a free port; the URL has the real one)."""
        import uvicorn
        from mcp.server.transport_security import TransportSecuritySettings
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        from raf.serve.connections import guarded_protocol
        from raf.serve.mcp.guard import mcp_security
        from raf.serve.security import SecurityMiddleware

        security = mcp_security(
            host,
            [*([token] if token is not None else []), *tokens],
            allowed_hosts=allowed_hosts,
            allowed_origins=allowed_origins,
            limits=limits,
        )
        await self.list_run_time_tools()
        self.issue_session_ids = True
        # the one guard below checks Host and Origin; the SDK's own check would be a second
        sdk_checks = TransportSecuritySettings(enable_dns_rebinding_protection=False)
        app: Any = self.server.streamable_http_app(host=host, transport_security=sdk_checks)
        app = SecurityMiddleware(app, security)
        limits = security.limits
        config = uvicorn.Config(
            app,
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_keep_alive=limits.keep_alive,
            http=guarded_protocol(AutoHTTPProtocol, limits),
            # as on `raf serve`: the guard's 431 applies to heads, not h11's bare 400
            h11_max_incomplete_event_size=limits.max_header_bytes,
        )
        server = uvicorn.Server(config)
        if ready is None:
            await server.serve()
            return
        serving = asyncio.ensure_future(server.serve())
        while not server.started and not serving.done():
            await asyncio.wait({serving}, timeout=0.02)
        if server.started:
            bound = server.servers[0].sockets[0].getsockname()
            name = f"[{bound[0]}]" if ":" in str(bound[0]) else str(bound[0])
            ready(f"http://{name}:{bound[1]}/mcp")
        await serving


@contextlib.asynccontextmanager
async def _serving(server: AgentMcpServer, _sdk: Any) -> AsyncIterator[AgentMcpServer]:
    """The SDK's lifespan: each handler finds the server as `ctx.lifespan_context`."""
    yield server


def _server_of(ctx: Any) -> AgentMcpServer:
    server = ctx.lifespan_context
    assert isinstance(server, AgentMcpServer)
    return server


def request_owner(ctx: Any) -> str:
    """Who is asking: the owner id `raf serve`'s guard found for the HTTP request's bearer
    token (every token its own tenant); `ANONYMOUS` over stdio and without tokens."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    state = scope.get("state") if isinstance(scope, Mapping) else None
    owner = state.get(OWNER_KEY) if isinstance(state, Mapping) else None
    return owner if isinstance(owner, str) else ANONYMOUS


async def set_logging_level(ctx: Any, params: Any) -> Any:
    """`logging/setLevel`: the level this client hears from now on."""
    import mcp_types

    level = str(params.level)
    if level in LEVELS:
        _server_of(ctx).log_levels.set(ctx, level)
    return mcp_types.EmptyResult()


async def list_tools(ctx: Any, params: Any) -> Any:
    """`tools/list`: `ask`, and with `expose_tools` the agent's tools."""
    import mcp_types

    server = _server_of(ctx)
    await server.list_run_time_tools()
    return mcp_types.ListToolsResult(tools=server.tool_specs())


async def call_tool(ctx: Any, params: Any) -> Any:
    """`tools/call`: `ask` runs the agent; an exposed tool runs on its own."""
    server = _server_of(ctx)
    name: str = params.name
    arguments: Mapping[str, Any] = params.arguments or {}
    if name == server.ask_tool:
        reporter = RunReporter(ctx=ctx, level=server.log_levels.get(ctx), logger=server.agent.name)
        return await ask(server, request_owner(ctx), arguments, reporter, params)
    return await call_exposed(server, name, arguments)


async def call_exposed(server: AgentMcpServer, name: str, arguments: Mapping[str, Any]) -> Any:
    """Run one exposed tool outside any conversation; a call that needs approval is
    refused (no person can give it here)."""
    tool = server.tools.get(name)
    if tool is None:
        return _text_result(f"unknown tool {name!r}", error=True)
    if tool.approval_required(arguments):
        why = approval_reason(tool, arguments) or "this call needs a person's approval"
        return _text_result(
            f"{name} refused: {why}. A call that needs approval runs only in a run of "
            f"the agent, where a person can approve it: use {server.ask_tool!r} instead",
            error=True,
        )
    context = ToolContext(agent=server.agent, session=server.tools_session())
    try:
        result = await tool.invoke(arguments, context)
    except Exception as exc:
        return _text_result(_failure(exc), error=True)
    if result.is_error:
        return _text_result(result.error or "tool failed", error=True)
    value = result.value
    text = value if isinstance(value, str) else json.dumps(value, default=str)
    return _text_result(text)


async def ask(
    server: AgentMcpServer,
    owner: str,
    arguments: Mapping[str, Any],
    reporter: RunReporter,
    params: Any,
) -> Any:
    """`ask`: a turn of the conversation `session_id` names (a new one without it), or,
    with `request_state`, the answers to the approvals an earlier `ask` handed back."""
    token = getattr(params, "request_state", None)
    if token:
        paused = server.paused.pop(token, None)
        if paused is None or paused.owner != owner:
            return _text_result(
                "this approval is no longer waiting (unknown or expired request_state); ask again",
                error=True,
            )
        replies = getattr(params, "input_responses", None) or {}
        answers = [decision_from(p, replies.get(p.call_id)) for p in paused.pending]
        return await _go_on(server, paused, reporter, answers)
    message = arguments.get("message")
    if not isinstance(message, str) or not message.strip():
        return _text_result("'message' must be a non-empty string", error=True)
    session_id = arguments.get("session_id")
    if session_id is not None and not isinstance(session_id, str):
        return _text_result("'session_id' must be a string", error=True)
    paused = _Paused(owner=owner)
    if not session_id:
        paused.new_name = secrets.token_urlsafe(18)
    elif server.issue_session_ids:
        paused.session_id = session_id  # only a session the server issued is found
    else:
        try:
            paused.session_id, paused.new_name = await _named(server, owner, session_id)
        except ServeError as exc:
            return _text_result(_refusal(exc), error=True)
    return await _go_on(server, paused, reporter, [], message)


async def _named(server: AgentMcpServer, owner: str, name: str) -> tuple[str | None, str | None]:
    """Over stdio, where any `session_id` names one: the stored session to continue, or
    the name a new one takes."""
    try:
        await server.host.session(server.agent.name, name, owner)
    except ServeError as exc:
        if exc.status != 404:
            raise
        Tenant(owner).check_name(name, SESSION_ID, "session")
        return None, name
    return name, None


async def _go_on(
    server: AgentMcpServer,
    paused: _Paused,
    reporter: RunReporter,
    answers: list[ToolApprovalResponse],
    message: str | None = None,
) -> Any:
    """Run (or resume) the agent until it answers, holding the session's lease, asking
    each approval on the way: at once on the request's stream, or in an input-required
    result the client answers with its retry (the session is stored waiting, and the
    lease given back); a client that cannot be asked gets each call denied. A failed or
    unfinished ask leaves the stored session as it was before it."""
    host = server.host
    messages = [] if message is None else [ChatMessage.user(message)]
    begin = functools.partial(
        host.begin,
        server.agent.name,
        paused.session_id,
        paused.owner,
        messages,
        answers,
        session_name=paused.new_name,
    )
    try:
        agent, session, active = await begin()
    except ServeError as exc:
        if exc.code != "awaiting_approval" or message is None:
            return _text_result(_refusal(exc), error=True)
        # the client moved on without answering: its waiting calls are declined first
        try:
            await _decline_waiting(server, paused, reporter)
            agent, session, active = await begin()
        except ServeError as again:
            return _text_result(_refusal(again), error=True)
        except Exception as failure:
            await reporter.log("error", f"the agent failed: {type(failure).__name__}")
            return _text_result(f"the agent failed: {_failure(failure)}", error=True)
    paused.session_id, paused.new_name = active.session_id, None
    if message is not None:
        paused.before = None if session.revision is None else session.snapshot()
    try:
        paused.denied += [a.call_id for a in answers if not a.approved]
        response = await _run(host, agent, session, active, messages, answers, reporter)
        while (
            response.finish_reason is FinishReason.AWAITING_APPROVAL
            and paused.rounds < _APPROVAL_ROUNDS
        ):
            paused.rounds += 1
            pending = response.pending_approvals
            paused.names.update({p.call_id: p.name for p in pending})
            if reporter.can_ask_later():
                return _ask_later(server, paused, pending)
            answers = await _answer_pending(response, reporter)
            paused.denied += [a.call_id for a in answers if not a.approved]
            response = await _run(host, agent, session, active, [], answers, reporter)
        denied = sorted({paused.names.get(c, c) for c in paused.denied})
        if response.finish_reason is FinishReason.AWAITING_APPROVAL:
            await _restore(host, session, active.key, paused)  # ready for the next ask
            waiting = sorted({r.name for r in response.pending_approvals} | set(denied))
            return _text_result(
                f"the agent kept asking to call {', '.join(waiting)}, which needs a person's "
                "approval; this MCP client could not give it",
                error=True,
            )
    except Exception as exc:
        await _restore(host, session, active.key, paused)
        await reporter.log("error", f"the agent failed: {type(exc).__name__}")
        return _text_result(f"the agent failed: {_failure(exc)}", error=True)
    finally:
        await host.release(active)
    structured: dict[str, Any] = {"answer": response.text, "session_id": active.session_id}
    if denied:
        structured["denied"] = denied
    return _text_result(response.text, structured=structured)


async def _decline_waiting(server: AgentMcpServer, paused: _Paused, reporter: RunReporter) -> None:
    """A new message to a session whose calls still wait for approval (an input-required
    result the client never answered with its retry): each waiting call is denied, the
    agent goes on with the denials (its reply stays in the session), and the tokens
    handed out for the session's questions stop working. The denied calls are kept in
    `paused` for the ask's answer. A run that asks again is declined again, up to the
    ask's rounds; past them the host's refusal of the new message stands."""
    host = server.host
    assert paused.session_id is not None  # only a stored session waits
    for token, other in list(server.paused.items()):
        if other.session_id == paused.session_id and other.owner == paused.owner:
            del server.paused[token]
    stored = await host.session(server.agent.name, paused.session_id, paused.owner)
    waiting = answerable_requests(stored)
    for _ in range(_APPROVAL_ROUNDS):
        if not waiting:
            return
        paused.names.update({p.call_id: p.name for p in waiting})
        answers = [
            ToolApprovalResponse(call_id=p.call_id, approved=False, reason=_ASKED_ANEW)
            for p in waiting
        ]
        agent, session, active = await host.begin(
            server.agent.name, paused.session_id, paused.owner, [], answers
        )
        try:
            response = await _run(host, agent, session, active, [], answers, reporter)
        finally:
            await host.release(active)
        paused.denied += [a.call_id for a in answers]
        waiting = response.pending_approvals  # what the run asked on the way, if anything


def _refusal(exc: ServeError) -> str:
    """What the client reads when the host refuses the turn before it starts."""
    if exc.code == "unknown_session":
        name = exc.details.get("session", "")
        return (
            f"unknown session_id {name!r}: this server issues session ids; ask without one "
            "to start a session and continue with the id returned"
        )
    return f"{exc.code}: {exc.message}"


def _ask_later(
    server: AgentMcpServer, paused: _Paused, pending: list[ApprovalRequestContent]
) -> Any:
    """Hand the questions to the client in an input-required result; its retry carries
    the answers and the unguessable token naming this paused ask."""
    import mcp_types

    token = secrets.token_urlsafe(18)
    paused.pending = list(pending)
    server.paused[token] = paused
    while len(server.paused) > MAX_PAUSED:
        server.paused.popitem(last=False)
    return mcp_types.InputRequiredResult(
        input_requests={p.call_id: approval_input_request(p) for p in pending},
        request_state=token,
    )


async def _run(
    host: AgentHost,
    agent: AgentLike,
    session: AgentSession,
    active: ActiveRun,
    messages: list[ChatMessage],
    answers: list[ToolApprovalResponse],
    reporter: RunReporter,
) -> ChatResponse:
    """One streamed run under the ask's lease, each step reported to the client, its
    turn stored, folded into a response."""
    folder = ResponseFolder()
    options = host.run_options(active, answers)
    await reporter.progress("the agent is thinking")
    await reporter.log("debug", f"run with {len(answers)} approval answer(s)")
    loaded = session.revision
    async for update in agent.run_stream(messages, session=session, options=options):
        folder.add(update)
        await reporter.step(update)
    await host.record_turn(session, loaded)
    return folder.response()


async def _answer_pending(
    response: ChatResponse, reporter: RunReporter
) -> list[ToolApprovalResponse]:
    """Ask the client's user about each call waiting for approval (an elicitation);
    a client without elicitation cannot approve, so each is denied with the reason."""
    if reporter.can_ask_now():
        return [await reporter.ask_approval(r) for r in response.pending_approvals]
    return [
        ToolApprovalResponse(call_id=r.call_id, approved=False, reason=_NO_APPROVALS)
        for r in response.pending_approvals
    ]


def _asks_every_call(tool: Tool) -> bool:
    """Whether `tool` asks a person before any call at all (a workspace tool under the
    `approve` policy asks only for some paths: an empty call does not ask)."""
    return bool(tool.requires_approval) and bool(tool.approval_required({}))


def _provider_tools(provider: object) -> list[object]:
    """The tools a context provider declares, whether it offers them as a list attribute,
    a property or a method (the skills provider's `tools()`)."""
    declared = getattr(provider, "tools", None)
    if callable(declared):
        declared = declared()
    return list(declared or ())


@dataclass(kw_only=True, slots=True)
class _Paused:
    """One `ask` on its way: whose, which session, as it was before, and the approvals
    so far."""

    owner: str
    """The owner id of the client that asked: only it may answer the approvals."""
    session_id: str | None = None
    """The session's id as its owner knows it; None until a new one is made."""
    new_name: str | None = None
    """The id a new session takes."""
    before: AgentSession | None = None
    """The stored session as it was before the ask; None when the ask made it."""
    pending: list[ApprovalRequestContent] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    """Call ids denied so far."""
    names: dict[str, str] = field(default_factory=dict)
    """Tool name by call id."""
    rounds: int = 0


MAX_PAUSED = 1000
"""Asks kept waiting for a client's answers; the oldest are forgotten first."""

_APPROVAL_ROUNDS = 3
"""How many rounds of approvals one `ask` may go through before it gives up."""

_ASKED_ANEW = "not approved: the MCP client sent a new message instead of answering this approval"

_NO_APPROVALS = (
    "this agent is served to an MCP client that cannot ask a person (it does not support "
    "elicitation), so no one can approve this call; answer without this tool"
)

_KEPT = frozenset({"id", "revision", "stored_text"})
"""What a restored session keeps of the stored one: its name and the revision the store
compares a save with."""


async def _restore(host: AgentHost, session: AgentSession, key: str, paused: _Paused) -> None:
    """Put the stored session back as it was before a failed or unfinished ask, under
    the ask's lease (a session the ask made is removed); nothing to do when the ask
    stored nothing. A store that fails here is logged: the ask has failed already."""
    before = paused.before
    if session.revision == (None if before is None else before.revision):
        return
    try:
        if before is None:
            await host.store.delete(key)
            return
        for item in fields(AgentSession):
            if item.name not in _KEPT:
                setattr(session, item.name, getattr(before, item.name))
        await host.store.save(session)
    except SessionError as exc:
        log.warning("could not put session %s back after a failed ask: %s", key, exc)
