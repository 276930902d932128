"""One run as the agent carries it: what the providers prepared, and the small checks
and conversions around recording the turn."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from raf.clients.tool_loop import LoopState
from raf.core.context import ContextProvider
from raf.core.errors import ConfigurationError
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
    for name in ("usage_limits", "session_usage_limits"):
        value = getattr(options, name)
        if value is not None and not isinstance(value, UsageLimits):
            raise ConfigurationError(
                f"expected UsageLimits or None, got {value!r}",
                key_path=f"AgentRunOptions({name}=...)",
            )


def agent_response(response: ChatResponse, session: AgentSession) -> AgentResponse:
    if isinstance(response, AgentResponse) and response.session_id == session.id:
        return response
    return AgentResponse(
        messages=response.messages,
        finish_reason=response.finish_reason,
        usage=response.usage,
        model_id=response.model_id,
        response_id=response.response_id,
        session_id=session.id,
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
