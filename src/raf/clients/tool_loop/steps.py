"""The steps of the loop: call the model → run a batch of calls → pause for approval →
(after the last round) one call without tools. Each takes the state, yields the updates
it makes when streaming, and sets `state.next` to the step that follows (None: done)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import replace

from raf.clients.tool_loop.invoke import invoke_all
from raf.clients.tool_loop.model_call import model_updates
from raf.clients.tool_loop.state import LoopState, Outcome
from raf.core.approvals import (
    approval_requests,
    check_approval_responses,
    denied_result,
    needs_approval,
    paused_batch,
    pending_from_messages,
)
from raf.core.contents import ApprovalRequestContent, FunctionResultContent
from raf.core.errors import RunCancelledError, UsageLimitExceeded
from raf.core.messages import Role
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind

CANCELLED_RESULT = "cancelled: the run was cancelled before this call finished"


async def call_model(state: LoopState) -> AsyncIterator[AgentResponseUpdate]:
    """Ask the model; its reply ends the run, pauses it, or leads to a batch of calls."""
    run = state.run
    if run.cancelled:
        state.next = finish_cancelled
        return
    use_tools = bool(state.tools) and state.rounds < state.max_rounds
    options = state.options
    if not use_tools and options.tools:
        options = replace(options, tools=[], tool_choice="none")
    try:
        if run.has_limits:
            run.check_request()
        async for update in model_updates(state, options):
            yield update
        if run.has_limits:
            run.check_tokens()
    except UsageLimitExceeded as exc:
        state.limit_error = exc
        state.next = finish_limit
        return
    except RunCancelledError:
        state.next = finish_cancelled
        return
    calls = [c for m in state.reply for c in m.function_calls]
    if not calls:
        state.finish_reason = state.finish_reason or FinishReason.STOP
        return
    if not use_tools:
        # The model called tools although none were offered: answer each call so the
        # transcript stays consistent, and stop.
        note = (
            f"not run: the tool-round limit ({state.max_rounds}) was reached"
            if state.tools
            else "not run: no tools are available in this run"
        )
        results = [FunctionResultContent(call_id=c.call_id, name=c.name, error=note) for c in calls]
        for update in state.add_results(results):
            yield update
        state.finish_reason = FinishReason.OTHER
        return
    state.batch_message = state.reply[-1]
    state.batch = calls
    needing = [c for c in calls if needs_approval(state.tools.get(c.name), c)]
    if needing:
        state.batch = needing
        state.next = pause_for_approval
    else:
        state.next = run_batch


async def pause_for_approval(state: LoopState) -> AsyncIterator[AgentResponseUpdate]:
    """Nothing of the batch runs: each call that needs a human gets a request."""
    message = state.batch_message
    assert message is not None
    requests = approval_requests(message, state.batch, state.run.approvals.spent)
    for update in state.pause_with(message, requests):
        yield update


async def run_batch(state: LoopState) -> AsyncIterator[AgentResponseUpdate]:
    """Run the batch's calls concurrently (as far as the limits allow) and add results."""
    run = state.run
    calls = [c for c in state.batch if c.call_id not in state.preset]
    if run.cancelled:
        state.next = finish_cancelled
        return
    if state.stream:
        for call in calls:
            yield AgentResponseUpdate(
                kind=UpdateKind.TOOL_CALLING,
                role=Role.ASSISTANT,
                call_id=call.call_id,
                tool_name=call.name,
            )
    allowed = run.allowed_tool_calls(len(calls)) if run.has_limits else len(calls)
    limit_error = run.tool_call_limit_error(len(calls)) if allowed < len(calls) else None
    try:
        ran = await invoke_all(state, calls[:allowed]) if allowed else []
    except RunCancelledError:
        state.next = finish_cancelled
        return
    run.count_tool_calls(allowed)
    by_id: dict[str, Outcome] = {o.call_id: o for o in ran}
    by_id.update(state.preset)
    if state.decided:
        # a call that paused again (its sub-agent asks once more) waits for a new answer
        # under the same id, so only answered calls spend their approval
        run.approvals.spend(
            [c for c in state.decided if not isinstance(by_id.get(c), ApprovalRequestContent)]
        )
    outcomes: list[Outcome] = []
    for call in state.batch:
        outcome = by_id.get(call.call_id)
        if outcome is None or (
            limit_error is not None and isinstance(outcome, ApprovalRequestContent)
        ):
            outcome = FunctionResultContent(
                call_id=call.call_id, name=call.name, error=f"not run: {limit_error}"
            )
        outcomes.append(outcome)
    done = [o for o in outcomes if isinstance(o, FunctionResultContent)]
    paused = [o for o in outcomes if isinstance(o, ApprovalRequestContent)]
    if done:
        for update in state.add_results(done):
            yield update
    if limit_error is not None:
        state.limit_error = limit_error
        state.next = finish_limit
        return
    if paused:
        # a tool waits for a human (an agent used as a tool whose run paused)
        for update in state.pause_with(state.batch_message, paused):
            yield update
        return
    state.preset, state.decided = {}, []
    state.rounds += 1
    state.next = call_model


async def resume_approved(state: LoopState) -> AsyncIterator[AgentResponseUpdate]:
    """The first step of a resumed run: the batch that paused, with the human decisions."""
    approvals = state.run.approvals
    pending = {p.call_id: p for p in approvals.pending} or pending_from_messages(state.conversation)
    decisions = check_approval_responses(pending, approvals.responses, approvals.spent)
    batch = paused_batch(state.conversation, pending)
    if state.run.cancelled:
        state.next = finish_cancelled
        return
    state.batch_message = None
    state.batch = batch
    state.preset = {
        c.call_id: denied_result(c, decisions[c.call_id].reason)
        for c in batch
        if c.call_id in decisions and not decisions[c.call_id].approved
    }
    state.decided = list(decisions)
    state.next = run_batch
    return
    yield  # a step is an async generator even when it has nothing to say


async def finish_cancelled(state: LoopState) -> AsyncIterator[AgentResponseUpdate]:
    """Give every call without a result a 'cancelled' result, then finish."""
    for update in state.answer_dangling(CANCELLED_RESULT):
        yield update
    state.finish_reason = FinishReason.CANCELLED


async def finish_limit(state: LoopState) -> AsyncIterator[AgentResponseUpdate]:
    """A usage limit was passed: answer what is open, then end with the error."""
    error = state.limit_error
    assert error is not None
    for update in state.answer_dangling(f"not run: {error}"):
        yield update
    state.finish_reason = FinishReason.OTHER
    error.response = state.response()
    raise error
