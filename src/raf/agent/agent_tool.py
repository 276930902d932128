"""An agent offered to another agent as a tool; the sub-agent's approvals pause the parent.

The child runs in its own session, kept in the parent session's provider state while it
waits for a human, so a paused parent (and its child) survive a store round-trip. When the
child's run ends awaiting approval, the tool raises `ToolApprovalPending`: the parent's
tool loop pauses with an approval request for the parent's call, whose reason lists what
the child asks. Approving that request invokes the tool again, which resumes the child
with every pending call approved; denying it gives the parent model an error result with
the reason, and the agent tells the tool (`release_call`) to drop the child's waiting task,
so nothing of it stays in the parent session. See docs/decisions/0501.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from raf.core.errors import ToolApprovalPending, ToolExecutionError
from raf.core.options import AgentRunOptions, ToolApprovalResponse
from raf.core.responses import FinishReason
from raf.core.sessions import AgentSession
from raf.core.tools import ToolContext, ToolResult, check_tool_name

STATE_PREFIX = "agent-tool:"


class AgentTool:
    """`AgentTool(agent)`: the model calls it with a `task`; the sub-agent answers it."""

    kind = "agent"
    requires_approval = False

    def __init__(self, agent: Any, *, name: str | None = None, description: str | None = None):
        self.agent = agent
        self.name: str = name or str(agent.name)
        check_tool_name(self.name, where="an agent used as a tool")
        self.description: str = (
            description or str(getattr(agent, "description", "") or "")
        ) or f"Ask the {self.name} agent to do a task and return its answer."
        self.parameters: dict[str, Any] = {
            "type": "object",
            "properties": {
                "task": {
                    "type": "string",
                    "description": "what the sub-agent should do, with everything it needs",
                }
            },
            "required": ["task"],
        }

    def approval_required(self, arguments: Mapping[str, Any]) -> bool:
        return False

    def _state_key(self) -> str:
        return STATE_PREFIX + self.name

    def _waiting(self, context: ToolContext) -> dict[str, Any] | None:
        """The children waiting for a human, by parent call id (one dict, changed in
        place, so calls of one batch running together do not overwrite each other)."""
        parent = context.session
        if parent is None:
            return None
        waiting = parent.provider_state.get(self._state_key())
        if not isinstance(waiting, dict):
            waiting = {}
            parent.set_provider_state(self._state_key(), waiting)
        if context.run is not None:  # a denied request ends its child's task
            for decision in context.run.approvals.responses:
                if not decision.approved:
                    waiting.pop(decision.call_id, None)
        return waiting

    def release_call(self, call_id: str, session: AgentSession) -> None:
        """The parent's call no longer waits for a human (denied, cancelled, or done): its
        paused child goes, and the state key with the last one (called by the agent)."""
        waiting = session.provider_state.get(self._state_key())
        if not isinstance(waiting, dict):
            return
        waiting.pop(call_id, None)
        if not waiting:
            session.provider_state.pop(self._state_key(), None)

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        waiting = self._waiting(context)
        stored = waiting.pop(context.call_id, None) if waiting is not None else None
        # the child's model and tool calls pass through the parent's middleware too (all
        # but the parent's own, such as its guardrails)
        inherited = context.run.middleware.inherited() if context.run is not None else ()
        options = AgentRunOptions(cancellation=context.cancellation, middleware=inherited)
        if stored is not None:
            child = AgentSession.from_dict(stored)
            reason = _decision_reason(context)
            options.tool_approval_responses = [
                ToolApprovalResponse(call_id=p.call_id, approved=True, reason=reason)
                for p in child.pending_approvals
            ]
            response = await self.agent.run([], session=child, options=options)
        else:
            task = arguments.get("task")
            if not isinstance(task, str) or not task.strip():
                raise ToolExecutionError(f"{self.name}: 'task' must be a non-empty string")
            child = self.agent.create_session()
            response = await self.agent.run(task, session=child, options=options)
        if response.finish_reason is FinishReason.AWAITING_APPROVAL:
            if waiting is None:
                return ToolResult.fail(
                    f"{self.name}: the sub-agent needs an approval, but this run has no "
                    "session to keep its state in"
                )
            waiting[context.call_id] = child.to_dict()
            if context.session is not None:  # (re)attach: a sibling may have emptied it
                context.session.provider_state[self._state_key()] = waiting
            asks = "; ".join(
                f"{p.name}({json.dumps(p.arguments, ensure_ascii=False, default=str)})"
                for p in response.pending_approvals
            )
            raise ToolApprovalPending(f"sub-agent {self.name!r} asks to run {asks}")
        if waiting is not None and not waiting and context.session is not None:
            context.session.provider_state.pop(self._state_key(), None)
        if response.finish_reason is FinishReason.CANCELLED:
            return ToolResult.fail(f"{self.name}: the sub-agent's run was cancelled")
        return ToolResult.ok(response.text)

    def __repr__(self) -> str:
        return f"AgentTool({self.name!r})"


def _decision_reason(context: ToolContext) -> str | None:
    if context.run is None:
        return None
    decision = context.run.approvals.decision(context.call_id)
    return decision.reason if decision is not None else None
