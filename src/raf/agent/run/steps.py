"""The steps of the loop: call the model → run a batch of calls → pause for approval →
(after the last round) one call without tools. Each takes the state and returns the step
that follows (None: done); what it has to say to a stream it adds with `state.emit`."""

from __future__ import annotations

from dataclasses import replace

from raf.agent.run.invoke import invoke_all
from raf.agent.run.model_call import model_response, model_updates
from raf.agent.run.state import LoopState, Outcome, Step
from raf.core.approvals import (
    approval_requests,
    check_approval_responses,
    denied_result,
    needs_approval,
    paused_batch,
    pending_from_messages,
)
from raf.core.contents import ApprovalRequestContent, FunctionCallContent, FunctionResultContent
from raf.core.errors import RunCancelledError, UsageLimitExceeded
from raf.core.messages import Role
from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind
from raf.core.tools import approval_reason

CANCELLED_RESULT = "cancelled: the run was cancelled before this call finished"

# Enum members read on every run, bound to names once: reading one off its class costs
# about a microsecond on Python 3.11.
_STOP = FinishReason.STOP
_TOOL_CALLING = UpdateKind.TOOL_CALLING
_ASSISTANT = Role.ASSISTANT


async def call_model(state: LoopState) -> Step | None:
    """Ask the model (with tools until the last round). Streaming, the call itself is
    handed to the driver (`state.live`), which yields its deltas as they come."""
    run = state.run
    token = run.cancellation  # `run.cancelled` and `run.has_limits` inline, as in every step
    if token is not None and token.cancelled:
        return finish_cancelled
    state.use_tools = use_tools = (
        bool(state.tools) and state.rounds < state.max_rounds and state.repeats.note is None
    )
    options = state.options
    if not use_tools and options.tools:
        options = replace(options, tools=[], tool_choice="none")
    if run.limits is not None or run.session_limits is not None:
        try:
            run.check_request()
        except UsageLimitExceeded as exc:
            state.limit_error = exc
            return finish_limit
    if state.stream:
        state.live = model_updates(state, options)
        return after_reply
    try:
        await model_response(state, options)
    except RunCancelledError:
        return finish_cancelled
    return _after_reply(state)


async def after_reply(state: LoopState) -> Step | None:
    """The model's reply ends the run, pauses it, or leads to a batch of calls."""
    return _after_reply(state)


def _after_reply(state: LoopState) -> Step | None:
    # `after_reply` as a plain function: it awaits nothing, and `call_model` calls it
    # once per model call without a coroutine of its own
    run = state.run
    if run.limits is not None or run.session_limits is not None:
        try:
            run.check_tokens()
        except UsageLimitExceeded as exc:
            state.limit_error = exc
            return finish_limit
    calls = [c for m in state.reply for c in m.contents if isinstance(c, FunctionCallContent)]
    if not calls:
        state.finish_reason = state.finish_reason or _STOP
        return None
    if not state.use_tools:
        # The model called tools although none were offered: answer each call so the
        # transcript stays consistent, and stop.
        if state.repeats.note is not None:
            note = f"not run: {state.repeats.note}"
        elif state.tools:
            note = f"not run: the tool-round limit ({state.max_rounds}) was reached"
        else:
            note = "not run: no tools are available in this run"
        state.add_results(
            [FunctionResultContent(call_id=c.call_id, name=c.name, error=note) for c in calls]
        )
        state.finish_reason = FinishReason.OTHER
        return None
    state.batch_message = state.reply[-1]
    state.batch = calls
    tools = state.tools
    for call in calls:
        # `needs_approval` inline: a call waits when its tool asks for this call
        tool = tools.get(call.name)
        if tool is not None and tool.requires_approval and tool.approval_required(call.arguments):
            state.batch = [c for c in calls if needs_approval(tools.get(c.name), c)]
            return pause_for_approval
    return run_batch


async def pause_for_approval(state: LoopState) -> Step | None:
    """Nothing of the batch runs: each call that needs a human gets a request."""
    message = state.batch_message
    assert message is not None
    requests = approval_requests(
        message,
        state.batch,
        state.run.approvals.spent,
        reason_for=lambda call: approval_reason(state.tools.get(call.name), call.arguments),
    )
    state.pause_with(message, requests)
    return None


async def run_batch(state: LoopState) -> Step | None:
    """Run the batch's calls concurrently (as far as the limits allow) and add results."""
    run = state.run
    preset = state.preset
    calls = [c for c in state.batch if c.call_id not in preset] if preset else state.batch
    token = run.cancellation
    if token is not None and token.cancelled:
        return finish_cancelled
    if state.decided:
        # claimed before anything runs: a resumer that loses the claim runs nothing
        await run.approvals.claim(state.decided)
    if state.stream:
        for call in calls:
            state.emit(
                AgentResponseUpdate(
                    kind=_TOOL_CALLING,
                    role=_ASSISTANT,
                    call_id=call.call_id,
                    tool_name=call.name,
                )
            )
    limited = run.limits is not None or run.session_limits is not None
    allowed = run.allowed_tool_calls(len(calls)) if limited else len(calls)
    limit_error = run.tool_call_limit_error(len(calls)) if allowed < len(calls) else None
    try:
        ran = await invoke_all(state, calls[:allowed]) if allowed else []
    except RunCancelledError:
        return finish_cancelled
    run.count_tool_calls(allowed)
    if not state.preset and limit_error is None and len(ran) == len(state.batch):
        outcomes = ran  # the common case: every call ran, in order
    else:
        outcomes = _merge(state, ran, limit_error)
    if state.decided:
        # a call that paused again (its sub-agent asks once more) waits for a new answer
        # under the same id, so only answered calls keep their approval spent
        paused_ids = {o.call_id for o in outcomes if isinstance(o, ApprovalRequestContent)}
        run.approvals.reopen([c for c in state.decided if c in paused_ids])
        run.approvals.spend_claimed()  # the claimed calls have run: no later call may use them
    results: list[FunctionResultContent] = outcomes  # type: ignore[assignment]  # checked below
    for outcome in outcomes:
        if not isinstance(outcome, FunctionResultContent):  # some wait for a human
            results = [o for o in outcomes if isinstance(o, FunctionResultContent)]
            break
    done = state.repeats.observe(state.batch, results)
    if done:
        state.add_results(done)
    if limit_error is not None:
        state.limit_error = limit_error
        return finish_limit
    if len(done) < len(outcomes):
        # a tool waits for a human (an agent used as a tool whose run paused)
        paused = [o for o in outcomes if isinstance(o, ApprovalRequestContent)]
        state.pause_with(state.batch_message, paused)
        return None
    if preset or state.decided:
        state.preset, state.decided = {}, []
    tools = state.tools
    for result in done:
        # `ends_run` inline: most tools have no such attribute
        if (
            result.error is None
            and result.name
            and getattr(tools.get(result.name), "ends_run", False)
        ):
            # a tool that ends the run succeeded (a handoff): the model is not asked again
            state.finish_reason = _STOP
            return None
    state.rounds += 1
    return call_model


def _merge(
    state: LoopState, ran: list[Outcome], limit_error: UsageLimitExceeded | None
) -> list[Outcome]:
    """Outcomes in call order: what ran, what was decided before, what a limit refused."""
    by_id: dict[str, Outcome] = {o.call_id: o for o in ran}
    by_id.update(state.preset)
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
    return outcomes


async def resume_approved(state: LoopState) -> Step | None:
    """The first step of a resumed run: the batch that paused, with the human decisions."""
    approvals = state.run.approvals
    pending = {p.call_id: p for p in approvals.pending} or pending_from_messages(state.conversation)
    decisions = check_approval_responses(pending, approvals.responses, approvals.spent)
    approvals.answer(decisions)
    batch = paused_batch(state.conversation, pending)
    if state.run.cancelled:
        return finish_cancelled
    state.batch_message = None
    state.batch = batch
    state.preset = {
        c.call_id: denied_result(c, decisions[c.call_id].reason)
        for c in batch
        if c.call_id in decisions and not decisions[c.call_id].approved
    }
    state.decided = list(decisions)
    return run_batch


async def finish_cancelled(state: LoopState) -> Step | None:
    """Give every call without a result a 'cancelled' result, then finish."""
    state.answer_dangling(CANCELLED_RESULT)
    state.finish_reason = FinishReason.CANCELLED
    return None


async def finish_limit(state: LoopState) -> Step | None:
    """A usage limit was passed: answer what is open; the next step raises the error."""
    error = state.limit_error
    assert error is not None
    state.answer_dangling(f"not run: {error}")
    state.finish_reason = FinishReason.OTHER
    error.response = state.response()
    return raise_limit


async def raise_limit(state: LoopState) -> Step | None:
    """End the run with the usage-limit error (after the stream said everything else)."""
    assert state.limit_error is not None
    raise state.limit_error
