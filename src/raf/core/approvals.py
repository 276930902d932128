"""The rules of tool-call approvals: which calls need a human, the requests they get,
matching the answers to what is pending, and the batch that resumes. The life of one
approval and the approval state of a run are `raf.core.call_approval`, which applies
these rules."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    FunctionCallContent,
    FunctionResultContent,
)
from raf.core.errors import ApprovalAlreadyClaimed, ApprovalError
from raf.core.messages import ChatMessage, new_id


class GatedTool(Protocol):
    """What the rules read of a tool: whether it asks, and for which calls."""

    @property
    def requires_approval(self) -> bool: ...

    def approval_required(self, arguments: Mapping[str, Any]) -> bool: ...


def needs_approval(tool: GatedTool | None, call: FunctionCallContent) -> bool:
    """Whether this call must wait for a human before it runs."""
    if tool is None or not tool.requires_approval:
        return False
    return tool.approval_required(call.arguments)


def approval_requests(
    message: ChatMessage,
    calls: Sequence[FunctionCallContent],
    spent: Sequence[str],
    reason_for: Callable[[FunctionCallContent], str | None] | None = None,
) -> list[ApprovalRequestContent]:
    """Requests for `calls`, each saying why it waits (`reason_for`); a call whose id was
    approved before gets a fresh id (in the message too), so an old approval can never
    answer it."""
    requests = []
    for call in calls:
        reason = reason_for(call) if reason_for is not None else None
        if call.call_id in spent:
            fresh = new_id("call")
            message.contents = [
                replace(c, call_id=fresh) if c is call else c for c in message.contents
            ]
            call = replace(call, call_id=fresh)
        requests.append(
            ApprovalRequestContent(
                call_id=call.call_id, name=call.name, arguments=dict(call.arguments), reason=reason
            )
        )
    return requests


def pending_from_messages(messages: Sequence[ChatMessage]) -> dict[str, ApprovalRequestContent]:
    """Approval requests in `messages` whose calls have no result yet."""
    answered = {c.call_id for m in messages for c in m.function_results}
    return {
        c.call_id: c for m in messages for c in m.approval_requests if c.call_id not in answered
    }


def paused_batch(
    messages: Sequence[ChatMessage], pending: dict[str, ApprovalRequestContent]
) -> list[FunctionCallContent]:
    """The calls of the message that paused; rebuilt from the requests if it is gone."""
    for message in reversed(messages):
        calls = message.function_calls
        if any(c.call_id in pending for c in calls):
            answered = {c.call_id for m in messages for c in m.function_results}
            batch = [c for c in calls if c.call_id not in answered]
            # The arguments that run are the ones recorded when the run paused.
            return [
                replace(c, arguments=dict(pending[c.call_id].arguments))
                if c.call_id in pending
                else c
                for c in batch
            ]
    return [
        FunctionCallContent(call_id=p.call_id, name=p.name, arguments=dict(p.arguments))
        for p in pending.values()
    ]


def check_approval_responses(
    pending: dict[str, ApprovalRequestContent],
    responses: Sequence[ApprovalResponseContent],
    spent: Sequence[str] = (),
) -> dict[str, ApprovalResponseContent]:
    """Match responses to pending requests; refuse anything that does not fit exactly,
    and any approval for a call id already spent in the session (a replay)."""
    replayed = [r.call_id for r in responses if r.call_id in spent]
    if replayed:
        # spent yet still pending: another run claimed it and has not recorded its result
        raise ApprovalAlreadyClaimed(replayed[0], elsewhere=replayed[0] in pending)
    if not pending:
        raise ApprovalError(
            "approval responses were given but no tool call is waiting for approval in this session"
        )
    decisions: dict[str, ApprovalResponseContent] = {}
    for response in responses:
        request = pending.get(response.call_id)
        if request is None:
            waiting = ", ".join(sorted(pending)) or "none"
            raise ApprovalError(
                f"call id {response.call_id!r} is not waiting for approval in this session "
                f"(waiting: {waiting}); nothing was run"
            )
        if response.call_id in decisions:
            raise ApprovalError(f"two responses were given for call id {response.call_id!r}")
        if response.arguments is not None and _canonical(response.arguments) != _canonical(
            request.arguments
        ):
            raise ApprovalError(
                f"the response for call {response.call_id!r} ({request.name}) carries "
                "arguments that differ from the pending call; nothing was run"
            )
        decisions[response.call_id] = response
    missing = [cid for cid in pending if cid not in decisions]
    if missing:
        raise ApprovalError("every pending call needs an answer; missing: " + ", ".join(missing))
    return decisions


def refuse_messages_with_answers(request: Sequence[ChatMessage]) -> None:
    """Approval responses resume a paused run: a run that carries them takes no new messages."""
    if request:
        raise ApprovalError(
            "send approval responses with no new messages: "
            "agent.run([], session=s, options=AgentRunOptions(tool_approval_responses=…))"
        )


def denied_result(call: FunctionCallContent, reason: str | None) -> FunctionResultContent:
    """The result the model reads for a call the human refused."""
    note = "the user denied this call"
    return FunctionResultContent(
        call_id=call.call_id, name=call.name, error=f"{note}: {reason}" if reason else note
    )


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False, default=str)
