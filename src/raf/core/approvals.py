"""The rules of tool-call approvals: which calls need a human, matching the answers to
what is pending, the batch that resumes, and spending each approval once (the lifecycle
of one approval is `raf.core.call_approval.CallApproval`).

A spent approval is recorded in the session (`AgentSession.spent_approvals`, stored with
it), so a worker in another process that loads the session refuses a replayed approval.
With a session store, approvals are claimed before their calls run: the session is saved
with them spent, and the store's revision check lets only one resumer of a shared
session through.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from raf.core.call_approval import ApprovalStatus, RunApprovals, stored_status
from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    Content,
    FunctionCallContent,
    FunctionResultContent,
)
from raf.core.errors import ApprovalAlreadyClaimed, ApprovalError
from raf.core.messages import ChatMessage, Role, new_id

__all__ = [  # RunApprovals is imported from here too
    "UNRECORDED_CLAIM",
    "RunApprovals",
    "approval_requests",
    "awaiting_answers",
    "check_approval_responses",
    "close_unrecorded_claims",
    "denied_result",
    "needs_approval",
    "paused_batch",
    "pending_from_messages",
    "refuse_messages_with_answers",
    "was_approved",
]

if TYPE_CHECKING:
    from raf.core.sessions import AgentSession
    from raf.core.tools import Tool, ToolContext


def needs_approval(tool: Tool | None, call: FunctionCallContent) -> bool:
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


UNRECORDED_CLAIM = (
    "no result was recorded: the run that claimed this call's approval stopped before "
    "saving it (or is still running elsewhere); whether the call ran is unknown"
)


def awaiting_answers(session: AgentSession) -> list[ApprovalRequestContent]:
    """The pending requests a human can still answer: those no run has claimed. When
    every pending request is claimed, a new message may go on (`close_unrecorded_claims`)."""
    return [
        p
        for p in session.pending_approvals
        if stored_status(session, p.call_id) is ApprovalStatus.PENDING
    ]


def close_unrecorded_claims(session: AgentSession) -> None:
    """A new message on a session whose every pending approval was claimed by a run that
    never recorded its result (killed, most likely): each unanswered call gets an error
    result saying so, and nothing waits any more, so the conversation can go on."""
    answered = {c.call_id for m in session.messages for c in m.function_results}
    open_calls = [
        c for m in session.messages for c in m.function_calls if c.call_id not in answered
    ]
    if open_calls:
        results: list[Content] = [
            FunctionResultContent(call_id=c.call_id, name=c.name, error=UNRECORDED_CLAIM)
            for c in open_calls
        ]
        session.messages.append(
            ChatMessage(role=Role.TOOL, contents=results, message_id=new_id("msg"))
        )
    session.pending_approvals = []


def denied_result(call: FunctionCallContent, reason: str | None) -> FunctionResultContent:
    """The result the model reads for a call the human refused."""
    note = "the user denied this call"
    return FunctionResultContent(
        call_id=call.call_id, name=call.name, error=f"{note}: {reason}" if reason else note
    )


def was_approved(
    context: ToolContext, name: str | None = None, arguments: Mapping[str, Any] | None = None
) -> bool:
    """True when a human approved exactly this call, and spends that approval.

    The approval must name this call id; when the run knows what was asked (the pending
    request, or the arguments the human saw) the tool name and arguments must match it;
    and each approval is spent on one call (recorded in the session), so a model that
    reuses an approved call id later gets no free pass, in this process or another.
    """
    run = context.run
    if run is None or not context.call_id:
        return False
    approvals = run.approvals
    if approvals.status(context.call_id) in (ApprovalStatus.SPENT, ApprovalStatus.REFUSED):
        return False
    for response in approvals.responses:
        if response.call_id != context.call_id or not response.approved:
            continue
        if arguments is not None:
            if response.arguments is not None and dict(response.arguments) != dict(arguments):
                continue
            asked = [p for p in approvals.pending if p.call_id == context.call_id]
            if asked and not any(
                (name is None or p.name == name) and dict(p.arguments) == dict(arguments)
                for p in asked
            ):
                continue
        approvals.use(context.call_id, response)
        return True
    return False


def _canonical(arguments: Mapping[str, Any]) -> str:
    return json.dumps(dict(arguments), sort_keys=True, ensure_ascii=False, default=str)
