"""The one driver of a run: set up → agent middleware → providers → model (tool loop
inside) → record. `Agent.run` folds it, `Agent.run_stream` yields what it reports and
`Agent.iter` hands it out step by step; a non-streaming run takes its fast path inside."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Protocol

from raf.agent.output_type import OutputType, check_for_client, resolve_output_type
from raf.agent.run.agent_run import (
    AgentRun,
    RunnableAgent,
    check_approvals,
    check_run_options,
)
from raf.agent.run.answer import answer, answer_quietly, answered
from raf.agent.run.providers import prepare
from raf.agent.run.recording import finish, record_failure
from raf.core.call_approval import RunApprovals
from raf.core.errors import RafError
from raf.core.messages import MessageInput, to_messages
from raf.core.middleware import AgentRunContext, MiddlewareSet, run_chain, stream_through
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse, AgentResponseUpdate, UpdateKind
from raf.core.run_context import RunContext
from raf.core.sessions import AgentSession
from raf.core.usage import UsageLimits


class RunSettings(Protocol):
    """What an agent gives each run beyond `RunnableAgent`: its run-wide settings, read
    when the run begins (the `Agent` itself is one)."""

    @property
    def middleware(self) -> MiddlewareSet: ...
    @property
    def usage_limits(self) -> UsageLimits | None: ...
    @property
    def session_usage_limits(self) -> UsageLimits | None: ...
    @property
    def tool_timeout(self) -> float | None: ...
    @property
    def output_type(self) -> OutputType | None: ...
    @property
    def output_retries(self) -> int: ...


def begin(
    agent: RunnableAgent,
    settings: RunSettings,
    messages: MessageInput,
    session: AgentSession,
    options: AgentRunOptions,
    instructions: str | None,
    *,
    stream: bool,
) -> AgentRun:
    """Check the request and set up the run (nothing has run yet); `instructions` is
    the agent's instructions template rendered for this run."""
    request = to_messages(messages)
    responses = options.tool_approval_responses
    if session.pending_approvals or responses:  # else nothing waits and nothing is answered
        check_approvals(session, request, options)
    if (
        options.tool_timeout is not None
        or options.output_retries is not None
        or options.usage_limits is not None
        or options.session_usage_limits is not None
    ):  # else every option it checks is unset, and unset is valid
        check_run_options(options)
    middleware = settings.middleware
    if options.middleware:
        extra = options.middleware
        if not isinstance(extra, MiddlewareSet):
            extra = MiddlewareSet.of(extra)
        middleware = middleware.joined(extra)
    # the run's two objects are built as `__init__` on a bare instance: the same as
    # calling the class (neither has a metaclass or a `__new__`), without Python 3.11
    # packing the keywords into a dict for `type.__call__` (see `ChatOptions.copy`)
    context: RunContext[Any] = object.__new__(RunContext)
    RunContext.__init__(
        context,
        deps=options.deps,
        agent=agent,
        session=session,
        approvals=RunApprovals.for_session(
            session, responses, options.session_store or agent.session_store
        ),
        cancellation=options.cancellation,
        limits=options.usage_limits or settings.usage_limits,
        session_limits=options.session_usage_limits or settings.session_usage_limits,
        middleware=middleware,
        tool_timeout=options.tool_timeout or settings.tool_timeout,
    )
    if options.output_type is None:
        output = settings.output_type
    else:
        output = resolve_output_type(options.output_type, where="output_type")
        check_for_client(agent.leaf_client, output, where="output_type")
    run = object.__new__(AgentRun)
    AgentRun.__init__(
        run,
        agent=agent,
        context=context,
        session=session,
        request=request,
        options=options,
        stream=stream,
        instructions=instructions,
        output=output,
        output_retries=(
            settings.output_retries if options.output_retries is None else options.output_retries
        ),
    )
    return run


async def run_to_end(run: AgentRun) -> AgentResponse:
    """Drive a run that does not stream to its record; its response. (A coroutine, not
    the stream's generator folded: the event loop registers each async generator, and
    this path has no update to report.)"""
    try:
        chain = run.context.middleware.agent
        if not chain:
            await prepare(run)
            await answer_quietly(run)
            answered(run)
        else:
            context = AgentRunContext(run=run.context, messages=run.request, options=run.options)

            async def final(ctx: AgentRunContext) -> None:
                run.request, run.options = ctx.messages, ctx.options
                await prepare(run)
                await answer_quietly(run)
                answered(run)
                ctx.result = run.response

            await run_chain(chain, context, final)
            run.response = _result_of(context)
    except BaseException as exc:
        await record_failure(run, exc)
        raise
    assert run.response is not None
    run.response = await finish(run, run.response)
    return run.response


async def drive_run(
    run: AgentRun | Callable[[], AgentRun],
) -> AsyncIterator[AgentResponseUpdate]:
    """Drive the run to its record. Streaming, yield its updates (the session is stored
    before the final one goes out); not streaming, yield nothing (`run_to_end` drives
    it): `run.response` is the answer when the iteration ends. `run` may be a function
    that sets the run up: it is called when the iteration starts (its checks raise
    there)."""
    if not isinstance(run, AgentRun):
        run = run()
    if not run.stream:
        await run_to_end(run)
        return
    chain = run.context.middleware.agent
    final_update: AgentResponseUpdate | None = None
    finished = UpdateKind.FINISHED  # read once, not for every update
    try:
        if not chain:
            await prepare(run)
            async for update in answer(run):
                if update.kind is finished:
                    final_update = update
                    continue
                yield update
            answered(run)
        else:
            context = AgentRunContext(
                run=run.context, messages=run.request, options=run.options, stream=True
            )

            async def drive_chain(emit: Callable[[Any], None]) -> None:
                async def final(ctx: AgentRunContext) -> None:
                    run.request, run.options = ctx.messages, ctx.options
                    await prepare(run)
                    async for update in answer(run):
                        emit(update)
                    answered(run)
                    ctx.result = run.response

                await run_chain(chain, context, final)
                run.response = _result_of(context)

            async for update in stream_through(drive_chain):
                if update.kind is finished:
                    final_update = update
                    continue
                yield update
    except BaseException as exc:
        await record_failure(run, exc)
        raise
    assert run.response is not None
    run.response = await finish(run, run.response)
    if final_update is not None:
        yield final_update


def _result_of(context: AgentRunContext) -> AgentResponse:
    if context.result is None:
        raise RafError(
            "an agent middleware returned without a result: call call_next() or set result"
        )
    return context.result


@dataclass(kw_only=True, slots=True)
class RunStep:
    """One step a run took, with what it reported to the stream."""

    name: str
    """The step: prepare (the providers), call_model, after_reply, run_batch,
    pause_for_approval, resume_approved, finish_cancelled, finish_limit, raise_limit,
    and last `end` (the run recorded; `AgentRunSteps.response` holds the answer)."""
    updates: list[AgentResponseUpdate] = field(default_factory=list)
    """The stream's updates the step made, in order (a model call's deltas included)."""


class AgentRunSteps:
    """`async with agent.iter(...) as steps: async for step in steps: ...`: the run's
    driver, reported step by step. A step is handed out once it has run and its updates
    are complete (the driver may have begun the next one: a step cannot be vetoed before
    it runs, but leaving the loop stops the run there). The steps' updates, joined, are
    what `run_stream` reports; once the `end` step is out, `response` holds what `run`
    returns."""

    def __init__(self, start: Callable[[], AgentRun]) -> None:
        self._start = start
        self._run: AgentRun | None = None
        self._updates: AsyncIterator[AgentResponseUpdate] | None = None

    @property
    def run(self) -> AgentRun:
        """The run being driven (set up, and checked, on first use)."""
        if self._run is None:
            self._run = self._start()
            self._run.trail = []
        return self._run

    @property
    def response(self) -> AgentResponse | None:
        """The run's response, once the `end` step has been taken."""
        run = self._run
        return run.response if run is not None and run.trail and run.trail[-1] == "end" else None

    async def __aenter__(self) -> AgentRunSteps:
        _ = self.run
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        updates = self._updates
        if updates is not None:
            close = getattr(updates, "aclose", None)
            if close is not None:
                await close()

    async def __aiter__(self) -> AsyncIterator[RunStep]:
        run = self.run
        trail = run.trail
        assert trail is not None
        if self._updates is not None:
            raise RafError("a run can be stepped through once")
        self._updates = updates = drive_run(run)
        seen = 0
        current: RunStep | None = None
        async for update in updates:
            while seen < len(trail):
                if current is not None:
                    yield current
                current = RunStep(name=trail[seen])
                seen += 1
            if current is None:  # an update before any step: an agent middleware's own
                current = RunStep(name="agent_middleware")
            current.updates.append(update)
        while seen < len(trail):
            if current is not None:
                yield current
            current = RunStep(name=trail[seen])
            seen += 1
        if current is not None:
            yield current
        trail.append("end")
        yield RunStep(name="end")
