"""One run as one object (`AgentRun`), what it reads from its agent, the checks before it
starts, and the small conversions around recording the turn."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import Enum
from typing import Any, Protocol

from raf.agent.output_type import OutputType
from raf.agent.run.client import FunctionInvokingChatClient
from raf.agent.run.state import LoopState
from raf.core.approvals import (
    awaiting_answers,
    check_approval_responses,
    close_unrecorded_claims,
    refuse_messages_with_answers,
)
from raf.core.chat_client import ChatClient
from raf.core.context import ContextProvider
from raf.core.errors import ApprovalError, ConfigurationError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import AgentResponse, ChatResponse
from raf.core.run_context import RunContext
from raf.core.sessions import AgentSession, SessionStore
from raf.core.tools import Tool
from raf.core.usage import UsageLimits

log = logging.getLogger("raf.agent")


class RunPhase(Enum):
    """Where a run stands; each phase says which of `AgentRun`'s parts are filled."""

    SET_UP = "set_up"
    """Checked and set up; no provider has run."""
    PREPARED = "prepared"
    """The providers ran: the conversation, options and tools for the model are set."""
    ANSWERED = "answered"
    """The model answered (its tool loop inside): `response` is set."""
    RECORDED = "recorded"
    """The turn is in the session (and its store)."""
    FAILED = "failed"
    """The run raised; the session keeps what the failure allows."""


# The phases as module names, for the code every run goes through: in Python 3.11,
# reading a member off its enum class (`RunPhase.ANSWERED`) is an attribute lookup of
# about a thousand instructions, each time.
SET_UP, PREPARED, ANSWERED, RECORDED, FAILED = (
    RunPhase.SET_UP,
    RunPhase.PREPARED,
    RunPhase.ANSWERED,
    RunPhase.RECORDED,
    RunPhase.FAILED,
)


class RunnableAgent(Protocol):
    """What a run reads from its agent (all public; nothing is reached behind it)."""

    @property
    def name(self) -> str: ...
    @property
    def instructions(self) -> str | None: ...
    @property
    def context_providers(self) -> tuple[ContextProvider, ...]: ...
    @property
    def default_options(self) -> ChatOptions: ...
    @property
    def tools(self) -> tuple[Tool, ...]: ...
    @property
    def tool_index(self) -> dict[str, Tool] | None:
        """The agent's tools by name, when `tools` is the list they were checked as."""

    @property
    def leaf_client(self) -> ChatClient: ...
    @property
    def tool_loop(self) -> FunctionInvokingChatClient: ...
    @property
    def session_store(self) -> SessionStore | None: ...


@dataclass(kw_only=True, slots=True)
class AgentRun:
    """One run of an agent, from its checks to its record: what it was asked, what the
    providers prepared, the tool loop it drives and what it answered. `phase` says how
    far it got; a paused run's state is all in its session."""

    agent: RunnableAgent
    context: RunContext
    """The run's context as tools and middleware see it."""
    session: AgentSession
    request: list[ChatMessage]
    options: AgentRunOptions
    stream: bool = False
    """Whether the caller reads updates as they come (else only the response)."""
    phase: RunPhase = RunPhase.SET_UP
    instructions: str | None = None
    """The instructions template rendered for this run."""
    output: OutputType | None = None
    """The type the answer must have (None: text)."""
    output_retries: int = 1
    trail: list[str] | None = None
    """The names of the steps taken, in order, when someone steps through the run."""
    # -- set when PREPARED ------------------------------------------------------------
    # (their defaults cost nothing to build: `prepare` replaces them all)
    invoked: Sequence[ContextProvider] = ()
    """The providers whose on_invoking ran (they hear how the run went)."""
    chat_messages: list[ChatMessage] = field(default_factory=list)
    chat_options: ChatOptions | None = None
    """The options for the model (None until prepared)."""
    tools: Sequence[Tool] = ()
    tool_index: dict[str, Tool] | None = None
    """`tools` by name, when already built (else the tool loop builds it)."""
    # -- while answering --------------------------------------------------------------
    loop: LoopState | None = None
    """The tool loop of the latest model exchange (None: the bare model answered)."""
    attempt: ChatResponse | None = None
    """The model's latest answer (its tool loop inside), before it becomes the response."""
    response: AgentResponse | None = None


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
