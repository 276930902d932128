"""Setting a run up: what it reads from its agent, the checks before anything runs, and
the `Run` they give."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from raf.agent.output_type import OutputType, check_for_client, resolve_output_type
from raf.agent.run.run import NO_TOOLS, Run, RunnableAgent
from raf.core.approvals import check_approval_responses, refuse_messages_with_answers
from raf.core.call_approval import RunApprovals, awaiting_answers, close_unrecorded_claims
from raf.core.errors import ApprovalError, ConfigurationError
from raf.core.messages import ChatMessage, MessageInput, to_messages
from raf.core.middleware import MiddlewareSet
from raf.core.options import AgentRunOptions
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
) -> Run:
    """Check the request and set the run up (nothing has run yet); `instructions` is
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
    context: RunContext[Any] = RunContext(
        deps=options.deps,
        agent=agent,
        session=session,
        approvals=RunApprovals.from_session(
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
    loop = agent.tool_loop
    return Run(
        context=context,
        client=agent.leaf_client,
        stream=stream,
        agent=agent,
        session=session,
        request=request,
        options=options,
        chat_options=agent.default_options,
        tools=NO_TOOLS,
        instructions=instructions,
        output=output,
        output_retries=(
            settings.output_retries if options.output_retries is None else options.output_retries
        ),
        max_rounds=loop.max_tool_rounds
        if options.max_tool_rounds is None
        else options.max_tool_rounds,
        max_result_chars=loop.max_result_chars,
        repeat_limit=loop.max_repeated_calls,
    )


def check_run_options(options: AgentRunOptions) -> None:
    """Refuse run settings that could only misbehave, naming the argument."""
    timeout = options.tool_timeout
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0
    ):
        raise ConfigurationError(
            f"must be a number of seconds above 0 or None, got {timeout!r}",
            key_path="AgentRunOptions(tool_timeout=...)",
        )
    retries = options.output_retries
    if retries is not None and (
        isinstance(retries, bool) or not isinstance(retries, int) or retries < 0
    ):
        raise ConfigurationError(
            f"must be a whole number 0 or above, got {retries!r}",
            key_path="AgentRunOptions(output_retries=...)",
        )
    for name in ("usage_limits", "session_usage_limits"):
        value = getattr(options, name)
        if value is not None and not isinstance(value, UsageLimits):
            raise ConfigurationError(
                f"expected UsageLimits or None, got {value!r}",
                key_path=f"AgentRunOptions({name}=...)",
            )


def check_approvals(
    session: AgentSession, request: Sequence[ChatMessage], options: AgentRunOptions
) -> None:
    """Refuse a run that does not fit the session's approvals: answers that do not match
    what is pending, answers sent with new messages, new messages while calls wait."""
    if not session.pending_approvals and not options.tool_approval_responses:
        return  # the usual run: nothing waits and nothing is answered
    pending = {p.call_id: p for p in session.pending_approvals}
    if options.tool_approval_responses:
        check_approval_responses(pending, options.tool_approval_responses, session.spent_approvals)
        refuse_messages_with_answers(request)
    elif pending and not awaiting_answers(session):
        close_unrecorded_claims(session)
    elif pending:
        waiting = ", ".join(f"{p.name} ({p.call_id})" for p in pending.values())
        raise ApprovalError(
            f"session {session.id!r} has tool calls waiting for approval: {waiting}; "
            "answer them with AgentRunOptions(tool_approval_responses=[...]) first"
        )


def with_run_arguments(
    options: AgentRunOptions | None,
    output_type: Any,
    variables: Mapping[str, Any] | None,
    deps: Any = None,
) -> AgentRunOptions | None:
    """The run's options with the `output_type`, `variables` and `deps` given to `run`."""
    if output_type is None and variables is None and deps is None:
        return options
    options = options if options is not None else AgentRunOptions()
    changes: dict[str, Any] = {}
    if deps is not None:
        changes["deps"] = deps
    if output_type is not None:
        changes["output_type"] = output_type
    if variables is not None:
        changes["template_variables"] = variables
    return replace(options, **changes)
