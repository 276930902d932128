"""The agent and its run lifecycle: providers → model (tool loop inside) → providers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Generic

from raf.agent.answer import answer, stream_answer
from raf.agent.output_run import DEFAULT_OUTPUT_RETRIES
from raf.agent.output_type import OutputType, check_for_client, resolve_output_type
from raf.agent.providers import close_providers
from raf.agent.recording import end_over_limit, fail, finish
from raf.agent.session_conflicts import claim_approvals
from raf.agent.template import PromptTemplate, render_instructions
from raf.agent.turn import Turn, check_approvals, check_run_options, with_run_arguments
from raf.clients.tool_loop import (
    DEFAULT_MAX_REPEATED_CALLS,
    DEFAULT_MAX_TOOL_ROUNDS,
    FunctionInvokingChatClient,
)
from raf.core.approvals import RunApprovals
from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider, as_context_provider
from raf.core.errors import RafError, UsageLimitExceeded
from raf.core.messages import ChatMessage, MessageInput, Role, to_messages
from raf.core.middleware import (
    NO_MIDDLEWARE,
    AgentRunContext,
    MiddlewareSet,
    run_chain,
    stream_through,
)
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import AgentResponse, AgentResponseUpdate, UpdateKind
from raf.core.run_context import DepsT, RunContext
from raf.core.sessions import AgentSession, SessionStore
from raf.core.tools import Tool, index_tools
from raf.core.usage import UsageLimits


class Agent(Generic[DepsT]):
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
        output_type: Any = None,
        output_retries: int = DEFAULT_OUTPUT_RETRIES,
        instructions_template: PromptTemplate | None = None,
        deps_type: type[DepsT] | None = None,
    ) -> None:
        self.name = name
        self.deps_type = deps_type
        """The type of the dependencies each run passes to its tools (None: any)."""
        self.description = description
        self.instructions = instructions
        self.instructions_template = instructions_template
        """Instructions rendered at each run from its variables (before `instructions`)."""
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
        self.output_type: OutputType | None = None
        """The type every answer must have (None: text); `response.value` holds it."""
        if output_type is not None:
            self.output_type = resolve_output_type(output_type, where="output_type")
            check_for_client(chat_client, self.output_type, where="output_type")
        self.output_retries = output_retries

    @property
    def output_schema(self) -> dict[str, Any] | None:
        """The JSON Schema the answers must match (None without an output type)."""
        output = self.output_type
        if output is None:
            return None
        return output.source if isinstance(output.source, dict) else output.schema.json_schema

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
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> AgentResponse:
        """Run one turn: providers, the model with its tool loop, providers again.

        `output_type` (or the agent's) makes `response.value` the answer as that type;
        `variables` fill the instructions template; `deps` reach the tools that ask for
        a `RunContext[Deps]`."""
        options = with_run_arguments(options, output_type, variables, deps)
        turn = self._begin(messages, session, options)
        chain = turn.run.middleware.agent
        try:
            if not chain:
                response = await answer(self, turn)
            else:
                context = AgentRunContext(run=turn.run, messages=turn.request, options=turn.options)

                async def final(ctx: AgentRunContext) -> None:
                    turn.request, turn.options = ctx.messages, ctx.options
                    ctx.result = await answer(self, turn)

                await run_chain(chain, context, final)
                response = _result_of(context)
        except UsageLimitExceeded as exc:
            await end_over_limit(self, turn, exc)
            raise
        except BaseException as exc:
            await fail(self, turn, exc)
            raise
        return await finish(self, turn, response)

    async def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        """The same lifecycle as `run`, yielding updates; the session is stored before
        the final update is yielded. With an output type, text deltas carry the
        `partial_value` parsed so far and the final update the validated `value`."""
        options = with_run_arguments(options, output_type, variables, deps)
        turn = self._begin(messages, session, options)
        chain = turn.run.middleware.agent
        final_update: AgentResponseUpdate | None = None
        try:
            if not chain:
                updates = stream_answer(self, turn)
            else:
                context = AgentRunContext(
                    run=turn.run, messages=turn.request, options=turn.options, stream=True
                )

                async def drive_chain(emit: Callable[[Any], None]) -> None:
                    async def final(ctx: AgentRunContext) -> None:
                        turn.request, turn.options = ctx.messages, ctx.options
                        async for update in stream_answer(self, turn):
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
            await end_over_limit(self, turn, exc)
            raise
        except BaseException as exc:
            await fail(self, turn, exc)
            raise
        assert turn.response is not None
        await finish(self, turn, turn.response)
        if final_update is not None:
            yield final_update

    def run_sync(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
        *,
        output_type: Any = None,
        variables: Mapping[str, Any] | None = None,
        deps: DepsT | None = None,
    ) -> AgentResponse:
        """`run` for scripts: starts an event loop (not callable inside one)."""
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(
                self.run(
                    messages,
                    session=session,
                    options=options,
                    output_type=output_type,
                    variables=variables,
                    deps=deps,
                )
            )
        raise RafError("run_sync() cannot be used inside a running event loop; await run()")

    # -- setting up a run -------------------------------------------------------------

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
        check_approvals(session, request, options)
        check_run_options(options)
        instructions = render_instructions(self, options.template_variables)
        middleware = self.middleware
        if options.middleware:
            extra = options.middleware
            if not isinstance(extra, MiddlewareSet):
                extra = MiddlewareSet.of(extra)
            middleware = middleware.joined(extra)
        run: RunContext[DepsT] = RunContext(
            deps=check_deps(self, options.deps),
            agent=self,
            session=session,
            approvals=RunApprovals.for_session(session, options.tool_approval_responses),
            cancellation=options.cancellation,
            limits=options.usage_limits or self.usage_limits,
            session_limits=options.session_usage_limits or self.session_usage_limits,
            middleware=middleware,
            tool_timeout=options.tool_timeout or self.tool_timeout,
        )
        output = self.output_type
        if options.output_type is not None:
            output = resolve_output_type(options.output_type, where="output_type")
            check_for_client(self.leaf_client, output, where="output_type")
        turn = Turn(
            run=run,
            request=request,
            options=options,
            spent_before=list(session.spent_approvals),
            instructions=instructions,
            output=output,
            output_retries=(
                self.output_retries if options.output_retries is None else options.output_retries
            ),
        )
        if self.session_store is not None and options.tool_approval_responses:
            store = self.session_store

            async def claim(call_ids: list[str]) -> None:
                await claim_approvals(store, session, call_ids)
                turn.claimed = True
                turn.spent_before = list(session.spent_approvals)

            run.approvals.on_claim = claim
        return turn

    def override(self, *, model: ChatClient | str) -> AbstractContextManager[Agent[DepsT]]:
        """Inside `with agent.override(model=...)`, runs use that model (a client or a
        model string) instead of the agent's; the agent's own comes back on leaving.
        For tests: other runs of the same agent meanwhile use the override too."""
        from raf.agent.override import override_model

        return override_model(self, model)

    async def aclose(self) -> None:
        """Close the providers that hold background work (those with an `aclose()`, such
        as the memory's consolidation worker), last registered first."""
        await close_providers(self.context_providers)

    async def __aenter__(self) -> Agent:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return (
            f"Agent(name={self.name!r}, tools={[t.name for t in self.tools]}, "
            f"providers={[p.name for p in self.context_providers]})"
        )


def check_deps(agent: Agent[Any], deps: Any) -> Any:
    """The run's dependencies, refused when they are not of the agent's `deps_type`."""
    expected = agent.deps_type
    if deps is None or expected is None:
        return deps
    try:
        fits = isinstance(deps, expected)
    except TypeError:  # a Protocol or alias isinstance cannot check
        return deps
    if not fits:
        raise RafError(
            f"agent {agent.name!r} takes deps of type {getattr(expected, '__name__', expected)}, "
            f"got {type(deps).__name__}"
        )
    return deps


def _result_of(context: AgentRunContext) -> AgentResponse:
    if context.result is None:
        raise RafError(
            "an agent middleware returned without a result: call call_next() or set result"
        )
    return context.result


def system_text(messages: Sequence[ChatMessage]) -> str:
    """The system prompt of a request, as the model saw it."""
    return "\n".join(m.text for m in messages if m.role is Role.SYSTEM)


def offered_tools(agent: Agent) -> list[str]:
    """The names of the agent's tools and of those its providers hold from the start (a
    workspace's file tools); tools a provider finds only during a run are not known."""
    names = [t.name for t in agent.tools]
    for provider in agent.context_providers:
        held = getattr(provider, "tools", None)
        if isinstance(held, list | tuple):
            names += [str(t.name) for t in held if getattr(t, "name", None)]
    return list(dict.fromkeys(names))


def agent_summary(agent: Agent) -> dict[str, Any]:
    """A JSON-ready description of an agent (used by the CLI and MCP server)."""
    return {
        "name": agent.name,
        "description": agent.description,
        "tools": offered_tools(agent),
        "providers": [{"name": p.name, "kind": p.kind} for p in agent.context_providers],
        "max_tool_rounds": agent.max_tool_rounds,
    }
