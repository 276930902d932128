"""Options of one chat request and of one agent run."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Literal

from raf.core.contents import ApprovalResponseContent
from raf.core.output import OutputSchema

if TYPE_CHECKING:
    from raf.core.cancellation import CancellationToken
    from raf.core.middleware_set import MiddlewareSet
    from raf.core.sessions import SessionStore
    from raf.core.tools import Tool
    from raf.core.usage import UsageLimits

ToolApprovalResponse = ApprovalResponseContent
"""A human decision on a pending call: `ToolApprovalResponse(call_id=, approved=, reason=)`."""

ToolChoice = Literal["auto", "none", "required"] | str


@dataclass(kw_only=True, slots=True)
class ChatOptions:
    """Settings of one chat request, only what a model reads; clients ignore what their
    API cannot express. The state of a run (agent, session, approvals, cancellation,
    limits) is in `RunContext`."""

    model_id: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    top_p: float | None = None
    stop: list[str] | None = None
    seed: int | None = None
    tool_choice: ToolChoice | None = None
    response_format: dict[str, Any] | None = None
    output_schema: OutputSchema | None = None
    """The answer must be JSON matching this schema (set by the agent from its output type)."""
    tools: list[Tool] = field(default_factory=list)
    additional: dict[str, Any] = field(default_factory=dict)
    """Provider-specific settings passed through as they are."""

    def copy(self) -> ChatOptions:
        """A shallow copy (faster than `dataclasses.replace`, made once per run)."""
        return ChatOptions(
            model_id=self.model_id,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            top_p=self.top_p,
            stop=self.stop,
            seed=self.seed,
            tool_choice=self.tool_choice,
            response_format=self.response_format,
            output_schema=self.output_schema,
            tools=self.tools,
            additional=self.additional,
        )

    def merged(self, overrides: ChatOptions | None) -> ChatOptions:
        """These options with every field that `overrides` sets replacing ours."""
        if overrides is None:
            return replace(self)
        changes: dict[str, Any] = {}
        for name in (
            "model_id",
            "temperature",
            "max_tokens",
            "top_p",
            "stop",
            "seed",
            "tool_choice",
            "response_format",
            "output_schema",
        ):
            value = getattr(overrides, name)
            if value is not None:
                changes[name] = value
        if overrides.tools:
            changes["tools"] = [*self.tools, *overrides.tools]
        if overrides.additional:
            changes["additional"] = {**self.additional, **overrides.additional}
        return replace(self, **changes)


@dataclass(kw_only=True, slots=True)
class AgentRunOptions:
    """Options of one `Agent.run`."""

    tool_approval_responses: list[ApprovalResponseContent] = field(default_factory=list)
    """Answers to the approvals pending in the session; resumes a paused run."""
    cancellation: CancellationToken | None = None
    chat_options: ChatOptions | None = None
    """Per-run overrides of the agent's model settings."""
    additional_instructions: str | None = None
    """Appended to the system prompt for this run only."""
    max_tool_rounds: int | None = None
    """Overrides the agent's limit for this run."""
    session_store: SessionStore | None = None
    """The store that keeps the session for this run (a server's, say), in place of the
    agent's own: approvals answered in this run are claimed there before their calls run,
    so that of two processes answering one approval only one runs the call, and the turn
    is recorded there when the run ends."""
    conflict_retries: int = 0
    """When the session was saved elsewhere during this run, how many times to reload it,
    re-apply this turn (its new messages and state) and save again before raising
    `SessionConflictError`; only a turn that appended without touching what the other
    save changed is re-applied."""

    usage_limits: UsageLimits | None = None
    """Caps on this run (replaces the agent's run limits)."""
    session_usage_limits: UsageLimits | None = None
    """Caps on the session's totals (replaces the agent's session limits)."""
    tool_timeout: float | None = None
    """Seconds a tool call may take when its tool declares no timeout of its own."""
    middleware: Sequence[Any] | MiddlewareSet = ()
    """Middleware for this run only, inside the agent's own (one already there is not
    added twice)."""
    output_type: Any = None
    """The type the answer must have for this run (replaces the agent's): a pydantic
    model, dataclass, TypedDict, a list or union of them, a scalar, or a JSON Schema dict;
    `response.value` holds the validated result."""
    output_retries: int | None = None
    """How many times an answer that fails validation goes back to the model with the
    errors (replaces the agent's; default 1)."""
    template_variables: Mapping[str, Any] | None = None
    """Values of the `{{variables}}` of the agent's instructions template for this run."""
    deps: Any = None
    """The dependencies this run's tools reach as `RunContext.deps` (see `deps_type`)."""
