"""A raf agent as an MCP server (stdio or streamable HTTP) on the official SDK.

The server offers one tool, `ask(message, session_id?)`, that runs the agent; with
`expose_tools` it also offers the agent's tools: its own and those its context providers
add at run time (workspace file and shell tools, skills, ...: each provider's
`on_invoking` runs once for a listing session before the server answers), except those
that need a human's approval for every call (a remote caller must not bypass that). A
tool that asks only for some calls (a workspace under the `approve` policy asks for paths
outside it) is offered, and such a call is refused with the reason, as the workspace's
rules decide it in a run: allowed calls run, denied ones fail. Sessions live in memory for the life
of the server, so a client can hold a conversation. Over stdio (one client) any
`session_id` names one; over HTTP, where many clients share the server and the protocol
names no client, the server issues each new session an unguessable id and continues only
sessions it issued, so no client reaches another's conversation. While `ask` runs, the
client hears progress and log messages (`mcp_report`); a call that needs approval is
asked of the client's user as an elicitation when the client supports it, and denied
otherwise (the agent is told why), leaving the session ready for the next `ask`.
"""

from __future__ import annotations

import asyncio
import json
import secrets
import warnings
from collections import OrderedDict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

from raf.core.agent_like import own_providers, own_tools
from raf.core.contents import ApprovalRequestContent
from raf.core.errors import ConfigurationError, SessionError
from raf.core.options import AgentRunOptions, ToolApprovalResponse
from raf.core.responses import ChatResponse, FinishReason, ResponseFolder
from raf.core.sessions import AgentSession
from raf.core.tools import Tool, ToolContext, approval_reason
from raf.serve.mcp.report import (
    LEVELS,
    LogLevels,
    RunReporter,
    approval_input_request,
    decision_from,
)
from raf.serve.model_errors import is_model_failure, model_error
from raf.serve.requests import store_failure
from raf.tools.mcp.client import _import_mcp

if TYPE_CHECKING:
    import mcp_types

    from raf.core.agent_like import AgentLike

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
    """Builds the MCP server for one agent and runs it over stdio or HTTP."""

    def __init__(self, agent: AgentLike, *, expose_tools: bool = False, ask_tool: str = "ask"):
        _import_mcp()
        self.agent = agent
        self.ask_tool = ask_tool
        self.sessions: OrderedDict[str, AgentSession] = OrderedDict()
        self.issue_session_ids = False
        """True over HTTP: new sessions get random ids and unknown ids are refused."""
        self.tools: dict[str, Tool] = {}
        self.left_out: dict[str, str] = {}
        """With `expose_tools`: the agent's tools not exposed, and why."""
        self.log_levels = LogLevels()
        self._paused: OrderedDict[str, _Paused] = OrderedDict()
        """Runs waiting for a client's answers, by the token sent in `request_state`."""
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
        session = self._tools_session()
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

    def _tools_session(self) -> AgentSession:
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
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_set_logging_level=self._set_level,
            )

    async def _set_level(self, ctx: Any, params: Any) -> Any:
        import mcp_types

        level = str(params.level)
        if level in LEVELS:
            self.log_levels.set(ctx, level)
        return mcp_types.EmptyResult()

    def _tool_specs(self) -> list[mcp_types.Tool]:
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

    async def _list_tools(self, ctx: Any, params: Any) -> Any:
        import mcp_types

        await self.list_run_time_tools()
        return mcp_types.ListToolsResult(tools=self._tool_specs())

    async def _call_tool(self, ctx: Any, params: Any) -> Any:
        name: str = params.name
        arguments: Mapping[str, Any] = params.arguments or {}
        if name == self.ask_tool:
            reporter = RunReporter(ctx=ctx, level=self.log_levels.get(ctx), logger=self.agent.name)
            return await self._ask(arguments, reporter, params)
        tool = self.tools.get(name)
        if tool is None:
            return _text_result(f"unknown tool {name!r}", error=True)
        if tool.approval_required(arguments):
            why = approval_reason(tool, arguments) or "this call needs a person's approval"
            return _text_result(
                f"{name} refused: {why}. A call that needs approval runs only in a run of "
                f"the agent, where a person can approve it: use {self.ask_tool!r} instead",
                error=True,
            )
        context = ToolContext(agent=self.agent, session=self._tools_session())
        try:
            result = await tool.invoke(arguments, context)
        except Exception as exc:
            return _text_result(_failure(exc), error=True)
        if result.is_error:
            return _text_result(result.error or "tool failed", error=True)
        value = result.value
        text = value if isinstance(value, str) else json.dumps(value, default=str)
        return _text_result(text)

    def _session_for(self, session_id: str | None) -> AgentSession | str:
        """The session to continue or a new one; a message when the id is refused."""
        if session_id:
            found = self.sessions.get(session_id)
            if found is not None:
                self.sessions.move_to_end(session_id)
                return found
            if self.issue_session_ids:
                return (
                    f"unknown session_id {session_id!r}: this server issues session ids; "
                    "ask without one to start a session and continue with the id returned"
                )
        if self.issue_session_ids:
            session_id = secrets.token_urlsafe(18)
        session = self.agent.create_session(session_id or None)
        self.sessions[session.id] = session
        while len(self.sessions) > MAX_SESSIONS:
            self.sessions.popitem(last=False)
        return session

    async def _ask(self, arguments: Mapping[str, Any], reporter: RunReporter, params: Any) -> Any:
        token = getattr(params, "request_state", None)
        if token:
            paused = self._paused.pop(token, None)
            if paused is None:
                return _text_result(
                    "this approval is no longer waiting (unknown or expired request_state); "
                    "ask again",
                    error=True,
                )
            replies = getattr(params, "input_responses", None) or {}
            answers = [decision_from(p, replies.get(p.call_id)) for p in paused.pending]
            return await self._go_on(paused, reporter, answers)
        message = arguments.get("message")
        if not isinstance(message, str) or not message.strip():
            return _text_result("'message' must be a non-empty string", error=True)
        session_id = arguments.get("session_id")
        if session_id is not None and not isinstance(session_id, str):
            return _text_result("'session_id' must be a string", error=True)
        session = self._session_for(session_id)
        if isinstance(session, str):
            return _text_result(session, error=True)
        paused = _Paused(session=session, before=session.snapshot())
        return await self._go_on(paused, reporter, [], message)

    async def _go_on(
        self,
        paused: _Paused,
        reporter: RunReporter,
        answers: list[ToolApprovalResponse],
        message: str | None = None,
    ) -> Any:
        """Run (or resume) the agent until it answers, asking each approval on the way:
        at once on the request's stream, or in an input-required result the client
        answers with its retry; a client that cannot be asked gets each call denied."""
        session = paused.session
        try:
            paused.denied += [a.call_id for a in answers if not a.approved]
            response = await self._run(
                message if message is not None else [], session, answers, reporter
            )
            while (
                response.finish_reason is FinishReason.AWAITING_APPROVAL
                and paused.rounds < _APPROVAL_ROUNDS
            ):
                paused.rounds += 1
                pending = response.pending_approvals
                paused.names.update({p.call_id: p.name for p in pending})
                if reporter.can_ask_later():
                    return self._ask_later(paused, pending)
                answers = await self._answer_pending(response, reporter)
                paused.denied += [a.call_id for a in answers if not a.approved]
                response = await self._run([], session, answers, reporter)
        except Exception as exc:
            _restore(session, paused.before)
            await reporter.log("error", f"the agent failed: {type(exc).__name__}")
            return _text_result(f"the agent failed: {_failure(exc)}", error=True)
        denied = sorted({paused.names.get(c, c) for c in paused.denied})
        if response.finish_reason is FinishReason.AWAITING_APPROVAL:
            _restore(session, paused.before)  # the session stays usable for the next ask
            waiting = sorted({r.name for r in response.pending_approvals} | set(denied))
            return _text_result(
                f"the agent kept asking to call {', '.join(waiting)}, which needs a person's "
                "approval; this MCP client could not give it",
                error=True,
            )
        structured: dict[str, Any] = {"answer": response.text, "session_id": session.id}
        if denied:
            structured["denied"] = denied
        return _text_result(response.text, structured=structured)

    def _ask_later(self, paused: _Paused, pending: list[ApprovalRequestContent]) -> Any:
        """Hand the questions to the client in an input-required result; its retry carries
        the answers and the unguessable token naming this paused run."""
        import mcp_types

        token = secrets.token_urlsafe(18)
        paused.pending = list(pending)
        self._paused[token] = paused
        while len(self._paused) > MAX_SESSIONS:
            self._paused.popitem(last=False)
        return mcp_types.InputRequiredResult(
            input_requests={p.call_id: approval_input_request(p) for p in pending},
            request_state=token,
        )

    async def _run(
        self,
        message: str | list[Any],
        session: AgentSession,
        answers: list[ToolApprovalResponse],
        reporter: RunReporter,
    ) -> ChatResponse:
        """One streamed run, each step reported to the client, folded into a response."""
        folder = ResponseFolder()
        options = AgentRunOptions(tool_approval_responses=answers)
        await reporter.progress("the agent is thinking")
        await reporter.log("debug", f"run with {len(answers)} approval answer(s)")
        async for update in self.agent.run_stream(message, session=session, options=options):
            folder.add(update)
            await reporter.step(update)
        return folder.response()

    async def _answer_pending(
        self, response: ChatResponse, reporter: RunReporter
    ) -> list[ToolApprovalResponse]:
        """Ask the client's user about each call waiting for approval (an elicitation);
        a client without elicitation cannot approve, so each is denied with the reason."""
        if reporter.can_ask_now():
            return [await reporter.ask_approval(r) for r in response.pending_approvals]
        return [
            ToolApprovalResponse(call_id=r.call_id, approved=False, reason=_NO_APPROVALS)
            for r in response.pending_approvals
        ]

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
    ) -> None:
        """Streamable HTTP at http://host:port/mcp until cancelled. Beyond loopback a bearer
        `token` is required; Host and Origin are checked against loopback, `host` and
        `allowed_hosts` whatever the address. `ready` is called with the endpoint's URL
        once the socket listens (port 0 picks a free port; the URL has the real one)."""
        import uvicorn
        from mcp.server.transport_security import TransportSecuritySettings
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        from raf.serve.connections import guarded_protocol
        from raf.serve.limits import ServeLimits
        from raf.serve.mcp.guard import (
            BearerTokenGuard,
            allowed_host_names,
            check_exposure,
            host_patterns,
        )

        check_exposure(host, token)
        await self.list_run_time_tools()
        self.issue_session_ids = True
        hosts, origins = host_patterns(allowed_host_names(host, allowed_hosts))
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True, allowed_hosts=hosts, allowed_origins=origins
        )
        app: Any = self.server.streamable_http_app(host=host, transport_security=security)
        # slow and idle clients, and wrong tokens, are bounded as on `raf serve`
        limits = ServeLimits()
        if token:
            app = BearerTokenGuard(app, token, limits)
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
    """One `ask` on its way: the session, as it was before, and the approvals so far."""

    session: AgentSession
    before: AgentSession
    pending: list[ApprovalRequestContent] = field(default_factory=list)
    denied: list[str] = field(default_factory=list)
    """Call ids denied so far."""
    names: dict[str, str] = field(default_factory=dict)
    """Tool name by call id."""
    rounds: int = 0


MAX_SESSIONS = 1000
"""Sessions kept in memory; the least recently used go first."""

_APPROVAL_ROUNDS = 3
"""How many rounds of approvals one `ask` may go through before it gives up."""

_NO_APPROVALS = (
    "this agent is served to an MCP client that cannot ask a person (it does not support "
    "elicitation), so no one can approve this call; answer without this tool"
)


def _restore(session: AgentSession, before: AgentSession) -> None:
    """Put a session back as it was before a failed or unfinished ask."""
    for item in fields(AgentSession):
        setattr(session, item.name, getattr(before, item.name))
