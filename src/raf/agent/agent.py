"""The agent and its run lifecycle: providers → model (tool loop inside) → providers."""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from raf.agent.session_conflicts import claim_approvals, save_turn
from raf.agent.turn import (
    PreparedRun,
    Turn,
    agent_response,
    check_run_options,
    release_calls,
)
from raf.clients.tool_loop import (
    DEFAULT_MAX_REPEATED_CALLS,
    DEFAULT_MAX_TOOL_ROUNDS,
    FunctionInvokingChatClient,
    LoopState,
    drive,
    run_to_end,
)
from raf.core.approvals import (
    RunApprovals,
    awaiting_answers,
    check_approval_responses,
    close_unrecorded_claims,
)
from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider, ContextResult, as_context_provider
from raf.core.errors import (
    ApprovalError,
    ProviderError,
    RafError,
    UsageLimitExceeded,
)
from raf.core.messages import ChatMessage, MessageInput, Role, to_messages
from raf.core.middleware import (
    NO_MIDDLEWARE,
    AgentRunContext,
    MiddlewareSet,
    run_chain,
    stream_through,
)
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import (
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
    FinishReason,
    ResponseFolder,
    UpdateKind,
)
from raf.core.run_context import RunContext
from raf.core.sessions import AgentSession, SessionStore
from raf.core.tools import Tool, as_tool, index_tools
from raf.core.usage import UsageLimits

log = logging.getLogger("raf.agent")


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
        middleware: Sequence[Any] | MiddlewareSet = (),
        usage_limits: UsageLimits | None = None,
        session_usage_limits: UsageLimits | None = None,
        tool_timeout: float | None = None,
        max_repeated_calls: int | None = DEFAULT_MAX_REPEATED_CALLS,
    ) -> None:
        self.name = name
        self.description = description
        self.instructions = instructions
        self._tool_index = index_tools(tools, where=f"on agent {name!r}")
        self.tools: tuple[Tool, ...] = tuple(self._tool_index.values())
        self._indexed_tools = self.tools  # `tools` may be replaced after building
        self.context_providers: tuple[ContextProvider, ...] = tuple(
            as_context_provider(p) for p in context_providers
        )
        self.max_tool_rounds = max_tool_rounds
        self.default_options = default_options or ChatOptions()
        self.session_store = session_store
        if isinstance(middleware, MiddlewareSet):
            self.middleware = middleware
        else:
            self.middleware = MiddlewareSet.of(middleware) if middleware else NO_MIDDLEWARE
        self.usage_limits = usage_limits
        self.session_usage_limits = session_usage_limits
        self.tool_timeout = tool_timeout
        self.leaf_client = chat_client
        self._tool_client = FunctionInvokingChatClient(
            chat_client, max_tool_rounds=max_tool_rounds, max_repeated_calls=max_repeated_calls
        )
        self.max_repeated_calls = self._tool_client.max_repeated_calls

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
        turn = self._begin(messages, session, options)
        chain = turn.run.middleware.agent
        try:
            if not chain:
                response = await self._answer(turn)
            else:
                context = AgentRunContext(run=turn.run, messages=turn.request, options=turn.options)

                async def final(ctx: AgentRunContext) -> None:
                    turn.request, turn.options = ctx.messages, ctx.options
                    ctx.result = await self._answer(turn)

                await run_chain(chain, context, final)
                response = _result_of(context)
        except UsageLimitExceeded as exc:
            await self._end_over_limit(turn, exc)
            raise
        except BaseException as exc:
            await self._fail(turn, exc)
            raise
        return await self._finish(turn, response)

    async def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        """The same lifecycle as `run`, yielding updates; the session is stored before
        the final update is yielded."""
        turn = self._begin(messages, session, options)
        chain = turn.run.middleware.agent
        final_update: AgentResponseUpdate | None = None
        try:
            if not chain:
                updates = self._stream_answer(turn)
            else:
                context = AgentRunContext(
                    run=turn.run, messages=turn.request, options=turn.options, stream=True
                )

                async def drive_chain(emit: Callable[[Any], None]) -> None:
                    async def final(ctx: AgentRunContext) -> None:
                        turn.request, turn.options = ctx.messages, ctx.options
                        async for update in self._stream_answer(turn):
                            emit(update)
                        ctx.result = turn.response

                    await run_chain(chain, context, final)
                    turn.response = _result_of(context)

                updates = stream_through(drive_chain)
            async for update in updates:
                if update.kind is UpdateKind.FINISHED:
                    final_update = update
                    continue
                yield update
        except UsageLimitExceeded as exc:
            await self._end_over_limit(turn, exc)
            raise
        except BaseException as exc:
            await self._fail(turn, exc)
            raise
        assert turn.response is not None
        await self._finish(turn, turn.response)
        if final_update is not None:
            yield final_update

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

    def _begin(
        self,
        messages: MessageInput,
        session: AgentSession | None,
        options: AgentRunOptions | None,
    ) -> Turn:
        """Check the request and set up the run's context (nothing has run yet)."""
        request = to_messages(messages)
        session = session if session is not None else self.create_session()
        options = options if options is not None else AgentRunOptions()
        self._check_approvals(session, request, options)
        check_run_options(options)
        middleware = self.middleware
        if options.middleware:
            extra = options.middleware
            if not isinstance(extra, MiddlewareSet):
                extra = MiddlewareSet.of(extra)
            middleware = middleware.joined(extra)
        run = RunContext(
            agent=self,
            session=session,
            approvals=RunApprovals.for_session(session, options.tool_approval_responses),
            cancellation=options.cancellation,
            limits=options.usage_limits or self.usage_limits,
            session_limits=options.session_usage_limits or self.session_usage_limits,
            middleware=middleware,
            tool_timeout=options.tool_timeout or self.tool_timeout,
        )
        turn = Turn(
            run=run, request=request, options=options, spent_before=list(session.spent_approvals)
        )
        if self.session_store is not None and options.tool_approval_responses:
            store = self.session_store

            async def claim(call_ids: list[str]) -> None:
                await claim_approvals(store, session, call_ids)
                turn.claimed = True
                turn.spent_before = list(session.spent_approvals)

            run.approvals.on_claim = claim
        return turn

    async def _answer(self, turn: Turn) -> AgentResponse:
        """Providers' on_invoking, then the model (its tool loop inside), not streaming."""
        prepared = await self._prepare(turn)
        loop = turn.loop = self._loop_for(turn, prepared, stream=False)
        if loop is None:
            response = await self.leaf_client.get_response(
                prepared.chat_messages, prepared.chat_options
            )
        else:
            await run_to_end(loop)
            response = loop.response()
        turn.response = agent_response(response, prepared.session)
        return turn.response

    async def _stream_answer(self, turn: Turn) -> AsyncIterator[AgentResponseUpdate]:
        """`_answer`, streaming; `turn.response` is set when the stream ends."""
        prepared = await self._prepare(turn)
        loop = turn.loop = self._loop_for(turn, prepared, stream=True)
        if loop is None:
            folder = ResponseFolder()
            async for update in self.leaf_client.get_streaming_response(
                prepared.chat_messages, prepared.chat_options
            ):
                folder.add(update)
                yield update
            response = folder.response()
        else:
            async for update in drive(loop):
                yield update
            response = loop.response()
        turn.response = agent_response(response, prepared.session)

    async def _prepare(self, turn: Turn) -> PreparedRun:
        request = turn.request
        session = turn.run.session
        assert session is not None
        options = turn.options
        session.touch_request_hash(request)

        instructions = [self.instructions] if self.instructions else []
        # what each provider injects, joined with the request into one new list at the end
        # (copying a long history once per run, not once per step)
        parts: list[Sequence[ChatMessage]] = []
        injected: list[Tool] = []
        invoked: list[ContextProvider] = []
        for provider in self.context_providers:
            try:
                result: Any = provider.on_invoking(self, session, request, options)
                if inspect.isawaitable(result):
                    result = await result
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
                parts = [result.messages]
            elif result.messages:
                parts.append(result.messages)
            if result.tools:
                injected.extend(as_tool(t) for t in result.tools)
        if options.additional_instructions:
            instructions.append(options.additional_instructions)

        if not instructions:
            chat_messages = [m for part in parts for m in part] if parts else []
        elif len(parts) == 1:
            chat_messages = [ChatMessage.system("\n".join(instructions)), *parts[0]]
        else:
            chat_messages = [ChatMessage.system("\n".join(instructions))]
            for part in parts:
                chat_messages.extend(part)
        chat_messages.extend(request)
        run_options = options.chat_options
        if (
            not injected
            and run_options is None
            and not self.default_options.tools
            and self.tools is self._indexed_tools
        ):
            # the common case: the agent's own tools, already checked and indexed at build
            tools = list(self.tools)
            indexed: dict[str, Tool] | None = self._tool_index
            chat_options = self.default_options.copy()
        else:
            chat_options = self.default_options.merged(run_options)
            # the merged options already hold the agent's defaults and the run's own tools
            tools = [*self.tools, *injected, *chat_options.tools]
            try:
                indexed = index_tools(tools, where=f"in a run of agent {self.name!r}")
            except RafError as exc:
                await self._call_on_invoked(invoked, session, request, None, exc)
                raise
        chat_options.tools = tools
        turn.prepared = PreparedRun(
            session=session,
            request=request,
            options=options,
            invoked=invoked,
            chat_messages=chat_messages,
            chat_options=chat_options,
            tools=tools,
            tool_index=indexed,
        )
        return turn.prepared

    def _loop_for(self, turn: Turn, prepared: PreparedRun, *, stream: bool) -> LoopState | None:
        """The tool loop for this run; None when the bare model will do (no tools, no
        approvals, no cancellation, no limits and no chat or function middleware)."""
        run = turn.run
        if (
            not prepared.tools
            and not run.approvals.responses
            and run.cancellation is None
            and not run.has_limits
            and not run.middleware.chat
            and not run.middleware.function
        ):
            return None
        return self._tool_client.start(
            prepared.chat_messages,
            prepared.chat_options,
            run=run,
            stream=stream,
            max_tool_rounds=turn.options.max_tool_rounds,
            tool_index=prepared.tool_index,
            own_messages=True,
        )

    def _check_approvals(
        self, session: AgentSession, request: Sequence[ChatMessage], options: AgentRunOptions
    ) -> None:
        pending = {p.call_id: p for p in session.pending_approvals}
        if options.tool_approval_responses:
            check_approval_responses(
                pending, options.tool_approval_responses, session.spent_approvals
            )
            if request:
                raise ApprovalError(
                    "send approval responses with no new messages: "
                    "agent.run([], session=s, options=AgentRunOptions(tool_approval_responses=…))"
                )
        elif pending and not awaiting_answers(session):
            close_unrecorded_claims(session)
        elif pending:
            waiting = ", ".join(f"{p.name} ({p.call_id})" for p in pending.values())
            raise ApprovalError(
                f"session {session.id!r} has tool calls waiting for approval: {waiting}; "
                "answer them with AgentRunOptions(tool_approval_responses=[...]) first"
            )

    async def _finish(
        self, turn: Turn, result: AgentResponse, error: BaseException | None = None
    ) -> AgentResponse:
        """Record the turn: pending approvals, providers' on_invoked, the store."""
        prepared = turn.prepared
        if prepared is None:  # an agent middleware answered without running the turn
            return result
        session = prepared.session
        closed = {p.call_id: p.name for p in session.pending_approvals}
        session.pending_approvals = result.pending_approvals
        for pending in session.pending_approvals:
            closed.pop(pending.call_id, None)
        release_calls(prepared.tools, closed, session)
        await self._call_on_invoked(prepared.invoked, session, prepared.request, result, error)
        if self.session_store is not None:
            await save_turn(self.session_store, session, turn.options.conflict_retries)
        return result

    async def _fail(self, turn: Turn, error: BaseException) -> None:
        """A run that raised: providers hear of it and the session keeps its state —
        except that when the model call failed after tools ran, the rounds that ran are
        stored (every call answered), so a retry does not run those tools again."""
        loop = turn.loop
        if loop is not None and turn.prepared is not None and error is loop.model_error:
            partial = loop.completed_rounds()
            if partial is not None:
                session = turn.prepared.session
                await self._finish(turn, agent_response(partial, session), error)
                return
        if turn.claimed and loop is not None and turn.prepared is not None:
            await self._record_claimed(turn, loop, error)
            return
        if turn.run.session is not None:
            turn.run.session.spent_approvals[:] = turn.spent_before
        if turn.prepared is not None:
            prepared = turn.prepared
            await self._call_on_invoked(
                prepared.invoked, prepared.session, prepared.request, None, error
            )

    async def _record_claimed(self, turn: Turn, loop: LoopState, error: BaseException) -> None:
        """A run that failed after its claim was stored: the claim stands (another try
        would be a replay), so the turn is stored with every call answered."""
        assert turn.prepared is not None
        loop.answer_dangling(
            "the run stopped before this call's result was recorded "
            f"({type(error).__name__}: {error}); it may or may not have run"
        )
        loop.finish_reason = FinishReason.OTHER
        try:
            await self._finish(turn, agent_response(loop.response(), turn.prepared.session), error)
        except Exception as exc:  # the run's own error is the one to raise
            log.error(
                "recording the claimed turn of session %r failed: %s", turn.prepared.session.id, exc
            )

    async def _end_over_limit(self, turn: Turn, error: UsageLimitExceeded) -> None:
        """A usage limit stopped the run: what it did (every call answered) is stored as
        the turn, and the error carries that response; before any model reply, nothing."""
        partial = error.response
        if turn.prepared is None or not isinstance(partial, ChatResponse) or not partial.messages:
            await self._fail(turn, error)
            return
        session = turn.prepared.session
        error.response = await self._finish(turn, agent_response(partial, session), error)

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
                done = provider.on_invoked(self, session, request, response, error)
                if inspect.isawaitable(done):
                    await done
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


def _result_of(context: AgentRunContext) -> AgentResponse:
    if context.result is None:
        raise RafError(
            "an agent middleware returned without a result: call call_next() or set result"
        )
    return context.result


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
