"""Every step of a run, in the order a run takes them:

    prepare ─→ call_model ─→ after_reply ─→ check_output ─→ record
       │            ↑             │    ↘ pause ─────↗
       └→ resume ─→ run_batch ←───┘
                      │ (a call that needs a human: pause)

`prepare` runs the context providers; a run that answers approvals goes to `resume`,
which runs the batch that paused. `call_model` asks the model; `after_reply` ends the
answer, pauses for approval, or runs the batch of calls the model asked for, after which
the model is asked again. `check_output` checks the answer against the output type (a
failed check goes back to `call_model` with the errors) and `record` stores the turn.
`finish_cancelled` and `finish_limit` end a run early. Each step takes the `Run` and
returns the step that follows (None: the run is done); what it has to say to a stream it
adds with `run.emit`. The tool loop on its own (no agent) takes the same steps from
`call_model` and is done where an agent's run would check its output.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from raf.agent.hooks import validate_output
from raf.agent.output_type import OutputMismatch
from raf.agent.run.invoke import invoke_all
from raf.agent.run.model_call import model_response, model_updates
from raf.agent.run.output import feedback, needs_check, retry_feedback
from raf.agent.run.providers import call_on_invoked, prepare_context
from raf.agent.run.run import (
    PHASE_ANSWERED,
    PHASE_RECORDED,
    PHASE_RECORDING,
    PHASE_SET_UP,
    Outcome,
    Run,
    Step,
)
from raf.agent.session_conflicts import save_turn
from raf.core.approvals import needs_approval
from raf.core.client_tool import client_side
from raf.core.contents import ApprovalRequestContent, FunctionCallContent, FunctionResultContent
from raf.core.errors import (
    ModelRetry,
    OutputValidationError,
    RunCancelledError,
    UsageLimitExceeded,
)
from raf.core.messages import ROLE_ASSISTANT, ChatMessage
from raf.core.responses import (
    FINISH_CANCELLED,
    FINISH_OTHER,
    FINISH_STOP,
    FINISH_TOOL_CALLS,
    KIND_TOOL_CALLING,
    AgentResponse,
    AgentResponseUpdate,
    ChatResponse,
)
from raf.core.sessions import AgentSession
from raf.core.tools import Tool, approval_reason

log = logging.getLogger("raf.agent")

CANCELLED_RESULT = "cancelled: the run was cancelled before this call finished"


async def prepare(run: Run) -> Step | None:
    """The context providers' on_invoking: the conversation, options and tools the
    model gets. A run that answers approvals resumes the batch that paused."""
    await prepare_context(run)
    return resume if run.context.approvals.responses else call_model


async def call_model(run: Run) -> Step | None:
    """Ask the model (with tools until the last round). Streaming, the call itself is
    handed to the pump (`run.live`), which awaits it while its deltas are relayed to the
    caller."""
    context = run.context
    token = context.cancellation
    if token is not None and token.cancelled:
        return finish_cancelled
    run.use_tools = use_tools = (
        bool(run.tools) and run.rounds < run.max_rounds and run.repeat_note is None
    )
    options = run.chat_options
    if not use_tools and options.tools:
        options = replace(options, tools=[], tool_choice="none")
    if context.limits is not None or context.session_limits is not None:
        try:
            context.check_request()
        except UsageLimitExceeded as exc:
            run.limit_error = exc
            return finish_limit
    if run.stream:
        run.live = model_updates(run, options)
        return after_reply
    try:
        await model_response(run, options)
    except RunCancelledError:
        return finish_cancelled
    return _after_reply(run)


async def after_reply(run: Run) -> Step | None:
    """The model's reply ends the answer, pauses the run, or leads to a batch of calls."""
    return _after_reply(run)


def _after_reply(run: Run) -> Step | None:
    # `after_reply` as a plain function: `call_model` goes on with it without a
    # coroutine of its own
    context = run.context
    if context.limits is not None or context.session_limits is not None:
        try:
            context.check_tokens()
        except UsageLimitExceeded as exc:
            run.limit_error = exc
            return finish_limit
    # plain loops on this path: a comprehension is a function call of its own
    calls = []
    for message in run.reply:
        for content in message.contents:
            if isinstance(content, FunctionCallContent):
                calls.append(content)
    if not calls:
        run.finish_reason = run.finish_reason or FINISH_STOP
        return answered(run)
    if not run.use_tools:
        # The model called tools although none were offered: answer each call so the
        # transcript stays consistent, and stop.
        if run.repeat_note is not None:
            note = f"not run: {run.repeat_note}"
        elif run.tools:
            note = f"not run: the tool-round limit ({run.max_rounds}) was reached"
        else:
            note = "not run: no tools are available in this run"
        run.add_results(
            [FunctionResultContent(call_id=c.call_id, name=c.name, error=note) for c in calls]
        )
        run.finish_reason = FINISH_OTHER
        return answered(run)
    run.batch_message = run.reply[-1]
    run.batch = calls
    tools = run.tools
    for call in calls:
        tool = tools.get(call.name)
        if tool is not None and needs_approval(tool, call):
            run.batch = [c for c in calls if needs_approval(tools.get(c.name), c)]
            return pause
    return run_batch


async def pause(run: Run) -> Step | None:
    """Nothing of the batch runs: each call that needs a human gets a request, and the
    run ends waiting for the answers."""
    message = run.batch_message
    assert message is not None
    tools = run.tools
    requests = run.context.approvals.pause(
        message,
        run.batch,
        lambda call: approval_reason(tools.get(call.name), call.arguments),
    )
    run.pause_with(message, requests)
    return answered(run)


async def resume(run: Run) -> Step | None:
    """The first step of a run that answers approvals: the batch that paused, with the
    human's decisions (a denied call's result is the refusal)."""
    resumed = run.context.approvals.resume(run.conversation)
    if run.context.cancelled:
        return finish_cancelled
    run.batch_message = None
    run.batch = resumed.batch  # its decisions stay with the approvals (`resumed`)
    return run_batch


async def run_batch(run: Run) -> Step | None:
    """Run the batch's calls concurrently (as far as the limits allow) and add results.
    Calls of tools the caller runs (`ClientTool`) are not run here: once the others have
    their results, the run ends with them handed back (`finish_reason` `tool_calls`)."""
    context = run.context
    tools = run.tools
    handed_back: list[FunctionCallContent] = []
    for call in run.batch:
        if client_side(tools.get(call.name)):
            handed_back.append(call)
    if handed_back:
        run.batch = [c for c in run.batch if not client_side(tools.get(c.name))]
    approvals = context.approvals
    resuming = approvals.resumed is not None
    refused = approvals.refused_results if resuming else None
    calls = [c for c in run.batch if c.call_id not in refused] if refused else run.batch
    token = context.cancellation
    if token is not None and token.cancelled:
        return finish_cancelled
    if resuming:
        # claimed before anything runs: a resumer that loses the claim runs nothing
        await approvals.claim_resumed()
    if run.stream:
        for call in calls:
            run.emit(
                AgentResponseUpdate(
                    kind=KIND_TOOL_CALLING,
                    role=ROLE_ASSISTANT,
                    call_id=call.call_id,
                    tool_name=call.name,
                )
            )
        await run.send_out()  # before the calls run: a caller sees a slow tool running
    limited = context.limits is not None or context.session_limits is not None
    allowed = context.allowed_tool_calls(len(calls)) if limited else len(calls)
    limit_error = context.tool_call_limit_error(len(calls)) if allowed < len(calls) else None
    try:
        ran = await invoke_all(run, calls[:allowed]) if allowed else []
    except RunCancelledError:
        return finish_cancelled
    context.count_tool_calls(allowed)
    if not refused and limit_error is None and len(ran) == len(run.batch):
        outcomes = ran  # the common case: every call ran, in order
    else:
        outcomes = _merge(run, ran, refused, limit_error)
    if resuming:
        # a call that paused again (its sub-agent asks once more) waits for a new answer
        # under the same id; the other claimed calls have run: no later call may use them
        paused_ids = [o.call_id for o in outcomes if isinstance(o, ApprovalRequestContent)]
        approvals.spend_resumed(paused_ids)
    results: list[FunctionResultContent] = outcomes  # type: ignore[assignment]  # checked below
    for outcome in outcomes:
        if not isinstance(outcome, FunctionResultContent):  # some wait for a human
            results = [o for o in outcomes if isinstance(o, FunctionResultContent)]
            break
    done = run.observe_repeats(run.batch, results)
    if done:
        run.add_results(done)
    if limit_error is not None:
        run.limit_error = limit_error
        return finish_limit
    if len(done) < len(outcomes):
        # a tool waits for a human (an agent used as a tool whose run paused)
        paused = [o for o in outcomes if isinstance(o, ApprovalRequestContent)]
        run.pause_with(run.batch_message, paused)
        return answered(run)
    if handed_back:
        run.finish_reason = FINISH_TOOL_CALLS
        return answered(run)
    for result in done:
        if (
            result.error is None
            and result.name
            and getattr(tools.get(result.name), "ends_run", False)
        ):
            # a tool that ends the run succeeded (a handoff): the model is not asked again
            run.finish_reason = FINISH_STOP
            return answered(run)
    run.rounds += 1
    return call_model


def _merge(
    run: Run,
    ran: list[Outcome],
    refused: Mapping[str, FunctionResultContent] | None,
    limit_error: UsageLimitExceeded | None,
) -> list[Outcome]:
    """Outcomes in call order: what ran, what the human refused, what a limit refused."""
    by_id: dict[str, Outcome] = {o.call_id: o for o in ran}
    if refused:
        by_id.update(refused)
    outcomes: list[Outcome] = []
    for call in run.batch:
        outcome = by_id.get(call.call_id)
        if outcome is None or (
            limit_error is not None and isinstance(outcome, ApprovalRequestContent)
        ):
            outcome = FunctionResultContent(
                call_id=call.call_id, name=call.name, error=f"not run: {limit_error}"
            )
        outcomes.append(outcome)
    return outcomes


def answered(run: Run) -> Step | None:
    """What follows the model's answer: the output check of an agent's run; for the tool
    loop on its own, nothing."""
    return check_output if run.agent is not None else None


async def check_output(run: Run) -> Step | None:
    """The answer is the run's response; with an output type or output validators it is
    checked first, and one that fails (a validation error, a validator's `ModelRetry`)
    goes back to the model with what was wrong (up to the retries)."""
    output, validators = run.output, run.validators
    if output is not None or validators:
        attempt = ChatResponse(
            messages=run.produced[run.attempt_start :], finish_reason=run.finish_reason
        )
        if needs_check(attempt):
            run.attempts += 1
            text = attempt.text
            note: ChatMessage | None
            try:
                value: Any = await output.parse_off_loop(text) if output is not None else text
                if validators:
                    value = await validate_output(validators, run.context, value)
            except OutputMismatch as exc:
                assert output is not None
                errors, note = exc.errors, feedback(output, exc.errors)
            except ModelRetry as exc:
                errors, note = exc.message, retry_feedback(exc.message)
            else:
                if output is not None:
                    run.value = value
                note = None
            if note is not None:
                if run.attempts > run.output_retries:
                    error = OutputValidationError(
                        raw_text=text,
                        errors=errors,
                        attempts=run.attempts,
                        type_name=output.type_name if output is not None else "answer",
                    )
                    error.response = run.chat_response()
                    raise error from None
                run.conversation.append(note)
                run.produced.append(note)
                # a new answer: its own rounds of tool calls and its own repeats
                run.attempt_start = len(run.produced)
                run.rounds = 0
                run.repeat_last, run.repeat_count, run.repeat_note = None, 0, None
                return call_model
    run.response = run.agent_response()
    run.phase = PHASE_ANSWERED
    return record


async def record(run: Run) -> Step | None:
    """Store the turn: pending approvals, the providers' on_invoked, the session store."""
    assert run.response is not None
    if run.phase is not PHASE_SET_UP:  # else an agent middleware answered alone
        run.phase = PHASE_RECORDING
    run.response = await store_turn(run, run.response)
    return None


async def finish_cancelled(run: Run) -> Step | None:
    """Give every call without a result a 'cancelled' result, then finish."""
    run.answer_dangling(CANCELLED_RESULT)
    run.finish_reason = FINISH_CANCELLED
    return answered(run)


async def finish_limit(run: Run) -> Step | None:
    """A usage limit was passed: answer what is open; the next step raises the error."""
    error = run.limit_error
    assert error is not None
    run.answer_dangling(f"not run: {error}")
    run.finish_reason = FINISH_OTHER
    error.response = run.chat_response()
    return raise_limit


async def raise_limit(run: Run) -> Step | None:
    """End the run with the usage-limit error (after the stream said everything else)."""
    assert run.limit_error is not None
    raise run.limit_error


async def store_turn(
    run: Run, result: AgentResponse, error: BaseException | None = None
) -> AgentResponse:
    """Store the turn: pending approvals, the providers' on_invoked, the session store
    (the `record` step; a failed run's recording stores what it keeps the same way)."""
    if run.phase is PHASE_SET_UP:  # an agent middleware answered without running it
        return result
    session, options = run.session, run.options
    assert session is not None and options is not None
    closed = run.context.approvals.to_session(session, result.pending_approvals)
    if closed:
        release_calls(run.tools.values(), closed, session)
    await call_on_invoked(run.agent, run.invoked, session, run.request, result, error)
    store = options.session_store or (run.agent.session_store if run.agent else None)
    if store is not None:
        await save_turn(store, session, options.conflict_retries)
    if error is None:
        run.phase = PHASE_RECORDED
    return result


def release_calls(tools: Iterable[Tool], closed: dict[str, str], session: AgentSession) -> None:
    """Calls that waited for approval and no longer do (approved and run, denied,
    cancelled): a tool keeping state for such a call (an agent used as a tool keeps its
    paused child) drops it through an optional `release_call(call_id, session)`, looked
    for on the tool and on the tools it wraps (`.inner`)."""
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
