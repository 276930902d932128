"""One run as the agent carries it: what the providers prepared, the checks before it
starts, and the small conversions around recording the turn."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from raf.agent.output_type import OutputType
from raf.clients.tool_loop import LoopState
from raf.core.approvals import (
    awaiting_answers,
    check_approval_responses,
    close_unrecorded_claims,
    refuse_messages_with_answers,
)
from raf.core.context import ContextProvider
from raf.core.errors import ApprovalError, ConfigurationError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import AgentResponse, ChatResponse
from raf.core.run_context import RunContext
from raf.core.sessions import AgentSession
from raf.core.tools import Tool
from raf.core.usage import UsageLimits

log = logging.getLogger("raf.agent")


@dataclass(kw_only=True, slots=True)
class PreparedRun:
    """Everything the model call needs, assembled by the providers."""

    session: AgentSession
    request: list[ChatMessage]
    options: AgentRunOptions
    invoked: list[ContextProvider]
    chat_messages: list[ChatMessage]
    chat_options: ChatOptions
    tools: list[Tool] = field(default_factory=list)
    tool_index: dict[str, Tool] | None = None
    """`tools` by name, when already built (else the tool loop builds it)."""


@dataclass(kw_only=True, slots=True)
class Turn:
    """One run as it goes: set up, then prepared by the providers, then answered."""

    run: RunContext
    request: list[ChatMessage]
    options: AgentRunOptions
    spent_before: list[str]
    claimed: bool = False
    """Whether this run stored a claim on its approvals (a failure must then record the
    turn rather than forget it)."""
    prepared: PreparedRun | None = None
    loop: LoopState | None = None
    response: AgentResponse | None = None
    attempt: ChatResponse | None = None
    """The model's latest answer (its tool loop inside), before it becomes the response."""
    instructions: str | None = None
    """The instructions template rendered for this run."""
    output: OutputType | None = None
    """The type the answer must have (None: text)."""
    output_retries: int = 1


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


def agent_response(
    response: ChatResponse, session: AgentSession, value: Any = None
) -> AgentResponse:
    if isinstance(response, AgentResponse) and response.session_id == session.id:
        if value is not None:
            response.value = value
        return response
    return AgentResponse(
        messages=response.messages,
        finish_reason=response.finish_reason,
        usage=response.usage,
        model_id=response.model_id,
        response_id=response.response_id,
        session_id=session.id,
        value=value,
    )


def release_calls(tools: Sequence[Tool], closed: dict[str, str], session: AgentSession) -> None:
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
