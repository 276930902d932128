"""The agent and its run lifecycle: providers → model (tool loop inside) → providers."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from raf.agent.session_conflicts import save_turn
from raf.clients.function_invoking import (
    DEFAULT_MAX_TOOL_ROUNDS,
    FunctionInvokingChatClient,
    check_approval_responses,
)
from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider, ContextResult, as_context_provider
from raf.core.errors import ApprovalError, ProviderError, RafError
from raf.core.messages import ChatMessage, MessageInput, Role, to_messages
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    ResponseFolder,
    UpdateKind,
)
from raf.core.sessions import AgentSession, SessionStore
from raf.core.tools import Tool, as_tool, index_tools

log = logging.getLogger("raf.agent")


@dataclass(kw_only=True, slots=True)
class _PreparedRun:
    """Everything the model call needs, assembled by the providers."""

    session: AgentSession
    request: list[ChatMessage]
    options: AgentRunOptions
    invoked: list[ContextProvider]
    chat_messages: list[ChatMessage]
    chat_options: ChatOptions
    client: ChatClient
    tools: list[Tool] = field(default_factory=list)


class Agent:
    """An LLM agent: instructions, tools, context providers and a chat client.

    The agent holds no conversation state: everything a run needs lives in the session,
    so one agent serves many sessions and a session can resume in another process.
    Build one with `AgentBuilder`.
    """

    def __init__(
        self,
        *,
        chat_client: ChatClient,
        instructions: str | None = None,
        tools: Sequence[Tool] = (),
        context_providers: Sequence[ContextProvider] = (),
        name: str = "agent",
        description: str = "",
        max_tool_rounds: int = DEFAULT_MAX_TOOL_ROUNDS,
        default_options: ChatOptions | None = None,
        session_store: SessionStore | None = None,
    ) -> None:
        self.name = name
        self.description = description
        self.instructions = instructions
        self.tools: tuple[Tool, ...] = tuple(
            index_tools(tools, where=f"on agent {name!r}").values()
        )
        self.context_providers: tuple[ContextProvider, ...] = tuple(
            as_context_provider(p) for p in context_providers
        )
        self.max_tool_rounds = max_tool_rounds
        self.default_options = default_options or ChatOptions()
        self.session_store = session_store
        self.leaf_client = chat_client
        self._tool_client = FunctionInvokingChatClient(chat_client, max_tool_rounds=max_tool_rounds)

    @property
    def chat_client(self) -> ChatClient:
        """The pipeline used when tools exist: the client wrapped in the tool loop."""
        return self._tool_client if self.tools else self.leaf_client

    def create_session(self, session_id: str | None = None) -> AgentSession:
        return AgentSession(id=session_id) if session_id else AgentSession()

    async def load_session(self, session_id: str) -> AgentSession:
        if self.session_store is None:
            raise RafError(f"agent {self.name!r} has no session store to load from")
        return await self.session_store.load(session_id)

    # -- running ----------------------------------------------------------------------

    async def run(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AgentResponse:
        """Run one turn: providers, the model with its tool loop, providers again."""
        run = await self._prepare(messages, session, options)
        try:
            response = await run.client.get_response(run.chat_messages, run.chat_options)
        except BaseException as exc:
            await self._finish_with_error(run, exc)
            raise
        return await self._finish(run, response)

    async def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        """The same lifecycle as `run`, yielding updates; the session is stored before
        the final update is yielded."""
        run = await self._prepare(messages, session, options)
        folder = ResponseFolder()
        final: AgentResponseUpdate | None = None
        try:
            async for update in run.client.get_streaming_response(
                run.chat_messages, run.chat_options
            ):
                folder.add(update)
                if update.kind is UpdateKind.FINISHED:
                    final = update
                    continue
                yield update
        except BaseException as exc:
            await self._finish_with_error(run, exc)
            raise
        await self._finish(run, folder.response())
        if final is not None:
            yield final

    def run_sync(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AgentResponse:
        """`run` for scripts: starts an event loop (not callable inside one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self.run(messages, session=session, options=options))
        raise RafError("run_sync() cannot be used inside a running event loop; await run()")

    # -- the lifecycle, top to bottom -------------------------------------------------

    async def _prepare(
        self,
        messages: MessageInput,
        session: AgentSession | None,
        options: AgentRunOptions | None,
    ) -> _PreparedRun:
        request = to_messages(messages)
        session = session if session is not None else self.create_session()
        options = options if options is not None else AgentRunOptions()
        self._check_approvals(session, request, options)
        session.touch_request_hash(request)

        instructions = [self.instructions] if self.instructions else []
        accumulated: list[ChatMessage] = []
        injected: list[Tool] = []
        invoked: list[ContextProvider] = []
        for provider in self.context_providers:
            try:
                result = await _maybe_await(provider.on_invoking(self, session, request, options))
            except BaseException as exc:
                await self._call_on_invoked(invoked, session, request, None, exc)
                raise
            invoked.append(provider)
            if not isinstance(result, ContextResult):
                error = ProviderError(
                    f"context provider {provider.name!r} ({type(provider).__name__}) returned "
                    f"{type(result).__name__} from on_invoking; it must return a ContextResult"
                )
                await self._call_on_invoked(invoked, session, request, None, error)
                raise error
            if result.instructions:
                instructions.append(result.instructions)
            if result.replace_messages:
                accumulated = list(result.messages)
            else:
                accumulated.extend(result.messages)
            injected.extend(as_tool(t) for t in result.tools)
        if options.additional_instructions:
            instructions.append(options.additional_instructions)

        chat_messages = accumulated + request
        if instructions:
            chat_messages.insert(0, ChatMessage.system("\n".join(instructions)))
        tools = [*self.tools, *injected] if injected else list(self.tools)
        try:
            index_tools(tools, where=f"in a run of agent {self.name!r}")
        except RafError as exc:
            await self._call_on_invoked(invoked, session, request, None, exc)
            raise
        chat_options = self.default_options.merged(options.chat_options)
        chat_options.tools = tools
        chat_options.agent = self
        chat_options.session = session
        chat_options.cancellation = options.cancellation
        chat_options.approval_responses = list(options.tool_approval_responses)
        chat_options.pending_approvals = list(session.pending_approvals)
        return _PreparedRun(
            session=session,
            request=request,
            options=options,
            invoked=invoked,
            chat_messages=chat_messages,
            chat_options=chat_options,
            client=self._client_for(tools, options),
            tools=tools,
        )

    def _client_for(self, tools: Sequence[Tool], options: AgentRunOptions) -> ChatClient:
        if not tools and not options.tool_approval_responses and options.cancellation is None:
            return self.leaf_client
        rounds = options.max_tool_rounds
        if rounds is not None and rounds != self.max_tool_rounds:
            return FunctionInvokingChatClient(self.leaf_client, max_tool_rounds=rounds)
        return self._tool_client

    def _check_approvals(
        self, session: AgentSession, request: Sequence[ChatMessage], options: AgentRunOptions
    ) -> None:
        pending = {p.call_id: p for p in session.pending_approvals}
        if options.tool_approval_responses:
            check_approval_responses(pending, options.tool_approval_responses)
            if request:
                raise ApprovalError(
                    "send approval responses with no new messages: "
                    "agent.run([], session=s, options=AgentRunOptions(tool_approval_responses=…))"
                )
        elif pending:
            waiting = ", ".join(f"{p.name} ({p.call_id})" for p in pending.values())
            raise ApprovalError(
                f"session {session.id!r} has tool calls waiting for approval: {waiting}; "
                "answer them with AgentRunOptions(tool_approval_responses=[...]) first"
            )

    async def _finish(self, run: _PreparedRun, response: ChatResponse) -> AgentResponse:
        result = AgentResponse(
            messages=response.messages,
            finish_reason=response.finish_reason,
            usage=response.usage,
            model_id=response.model_id,
            response_id=response.response_id,
            session_id=run.session.id,
        )
        closed = {p.call_id: p.name for p in run.session.pending_approvals}
        run.session.pending_approvals = result.pending_approvals
        for pending in run.session.pending_approvals:
            closed.pop(pending.call_id, None)
        _release_calls(run.tools, closed, run.session)
        await self._call_on_invoked(run.invoked, run.session, run.request, result, None)
        if self.session_store is not None:
            await save_turn(self.session_store, run.session, run.options.conflict_retries)
        return result

    async def _finish_with_error(self, run: _PreparedRun, error: BaseException) -> None:
        await self._call_on_invoked(run.invoked, run.session, run.request, None, error)

    async def _call_on_invoked(
        self,
        providers: Sequence[ContextProvider],
        session: AgentSession,
        request: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        """Every provider's on_invoked, in reverse order; one failing does not skip others."""
        failures: list[tuple[ContextProvider, Exception]] = []
        for provider in reversed(providers):
            try:
                await _maybe_await(provider.on_invoked(self, session, request, response, error))
            except Exception as exc:
                log.error("on_invoked of provider %r failed: %s", provider.name, exc)
                failures.append((provider, exc))
        if failures and error is None:
            failed, cause = failures[0]
            raise ProviderError(
                f"on_invoked of context provider {failed.name!r} failed: {cause}"
            ) from cause

    async def aclose(self) -> None:
        """Close the providers that hold background work (those with an `aclose()`, such
        as the memory's consolidation worker), last registered first."""
        for provider in reversed(self.context_providers):
            close = getattr(provider, "aclose", None)
            if callable(close):
                try:
                    await close()
                except Exception as exc:
                    log.error("closing provider %r failed: %s", provider.name, exc)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"Agent(name={self.name!r}, tools={[t.name for t in self.tools]}, "
            f"providers={[p.name for p in self.context_providers]})"
        )


async def _maybe_await(value: Any) -> Any:
    """Hooks may be written as plain functions; await only what is awaitable."""
    return await value if inspect.isawaitable(value) else value


def system_text(messages: Sequence[ChatMessage]) -> str:
    """The system prompt of a request, as the model saw it."""
    return "\n".join(m.text for m in messages if m.role is Role.SYSTEM)


def agent_summary(agent: Agent) -> dict[str, Any]:
    """A JSON-ready description of an agent (used by the CLI and MCP server)."""
    return {
        "name": agent.name,
        "description": agent.description,
        "tools": [t.name for t in agent.tools],
        "providers": [{"name": p.name, "kind": p.kind} for p in agent.context_providers],
        "max_tool_rounds": agent.max_tool_rounds,
    }


def _release_calls(tools: Sequence[Tool], closed: dict[str, str], session: AgentSession) -> None:
    """Calls that waited for approval and no longer do (approved and run, denied,
    cancelled): a tool keeping state for such a call (an agent used as a tool keeps its
    paused child) drops it through an optional `release_call(call_id, session)`, looked
    for on the tool and on the tools it wraps (`.inner`)."""
    if not closed:
        return
    by_name = {t.name: t for t in tools}
    for call_id, name in closed.items():
        tool: Any = by_name.get(name)
        while tool is not None and not hasattr(tool, "release_call"):
            tool = getattr(tool, "inner", None)
        if tool is None:
            continue
        try:
            tool.release_call(call_id, session)
        except Exception as exc:  # releasing is best effort; the run's result stands
            log.error("release_call of tool %r failed: %s", name, exc)
