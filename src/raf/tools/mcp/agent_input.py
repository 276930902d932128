"""Elicitation and sampling during an MCP tool call, answered by a person through the
agent's approvals.

A run cannot stay open while a person thinks, so the first time the server asks, the
request is declined for now (elicitation: `cancel`; sampling: an error) and kept in the
session; the tool raises `ToolApprovalPending`, which pauses the run with an approval
request whose reason says what the server asks. Approving it (with the form's content in
`ToolApprovalResponse.answer`) calls the tool again, and this time the same question is
answered from what the person gave: the form's content with the schema's defaults for
what was left out, or, for sampling, a completion from the agent's own model. Denying it
ends the call with an error, as for any denied call. Each question asked in a call is
one approval, so a tool that asks twice pauses twice.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from raf.core.tools import ToolContext
from raf.tools.mcp.interaction import (
    CallScope,
    ElicitationAnswer,
    ElicitationRequest,
    SamplingAnswer,
    SamplingRequest,
)

STATE_PREFIX = "mcp-input:"
MAX_QUESTIONS = 8
"""Questions one call may ask before raf stops pausing for it."""


def state_key(call_id: str) -> str:
    return STATE_PREFIX + call_id


@dataclass(kw_only=True, slots=True)
class AgentInput:
    """The answers a person gave for one tool call, and the question now waiting."""

    context: ToolContext
    sampling_mode: str = "approve"
    answers: list[dict[str, Any]] = field(default_factory=list)
    used: int = 0
    asked: ElicitationRequest | SamplingRequest | None = None

    @classmethod
    def resume(cls, context: ToolContext, sampling_mode: str) -> AgentInput:
        """The answers so far for this call, with the person's latest decision added."""
        flow = cls(context=context, sampling_mode=sampling_mode)
        session = context.session
        stored = session.provider_state.get(state_key(context.call_id)) if session else None
        if not isinstance(stored, dict):
            return flow
        flow.answers = list(stored.get("answers") or [])
        asked = stored.get("asked")
        decision = _decision(context)
        if isinstance(asked, dict) and decision is not None and decision.approved:
            flow.answers.append({"kind": asked.get("kind"), "answer": dict(decision.answer or {})})
        return flow

    @property
    def can_pause(self) -> bool:
        return self.context.session is not None and len(self.answers) < MAX_QUESTIONS

    def scope(self) -> CallScope:
        return CallScope(elicitation=self.elicit, sampling=self.sample)

    def _next(self, kind: str) -> dict[str, Any] | None:
        if self.used < len(self.answers) and self.answers[self.used].get("kind") == kind:
            self.used += 1
            return self.answers[self.used - 1]
        return None

    async def elicit(self, request: ElicitationRequest) -> ElicitationAnswer:
        given = self._next("elicitation")
        if given is not None:
            return ElicitationAnswer(action="accept", content=dict(given.get("answer") or {}))
        if self.asked is None and self.can_pause:
            self.asked = request
        return ElicitationAnswer(action="cancel")

    async def sample(self, request: SamplingRequest) -> SamplingAnswer:
        if self.sampling_mode == "always" or self._next("sampling") is not None:
            return await complete_with_agent_model(self.context, request)
        if self.asked is None and self.can_pause:
            self.asked = request
        return SamplingAnswer(refused="waiting for a person to approve this completion")

    def save(self) -> None:
        """Keep the answers and the waiting question in the session for the next call."""
        assert self.asked is not None and self.context.session is not None
        self.context.session.set_provider_state(
            state_key(self.context.call_id),
            {"answers": self.answers, "asked": self.asked.to_dict()},
        )

    def clear(self) -> None:
        session = self.context.session
        if session is not None:
            session.provider_state.pop(state_key(self.context.call_id), None)


def _decision(context: ToolContext) -> Any:
    run = context.run
    if run is None:
        return None
    for decision in run.approvals.responses:
        if decision.call_id == context.call_id:
            return decision
    return None


async def complete_with_agent_model(
    context: ToolContext, request: SamplingRequest
) -> SamplingAnswer:
    """Answer a sampling request with the model of the agent running the tool (its leaf
    client: no tools, no providers, no session)."""
    from raf.core.contents import TextContent
    from raf.core.messages import ChatMessage, Role
    from raf.core.options import ChatOptions

    client = getattr(context.agent, "leaf_client", None)
    if client is None:
        return SamplingAnswer(refused="no agent model is available to answer")
    messages: list[ChatMessage] = []
    if request.system_prompt:
        messages.append(
            ChatMessage(role=Role.SYSTEM, contents=[TextContent(text=request.system_prompt)])
        )
    for role, text in request.messages:
        messages.append(
            ChatMessage(
                role=Role.ASSISTANT if role == "assistant" else Role.USER,
                contents=[TextContent(text=text)],
            )
        )
    options = ChatOptions(max_tokens=request.max_tokens, temperature=request.temperature)
    try:
        response = await client.get_response(messages, options)
    except Exception as exc:
        return SamplingAnswer(refused=f"the model failed: {type(exc).__name__}: {exc}")
    return SamplingAnswer(text=response.text, model=response.model_id or "raf")
