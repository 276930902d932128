"""How a run that raised is recorded: a failed one, one whose claim on its approvals
stands, one stopped by a usage limit (a finished run is the `record` step's)."""

from __future__ import annotations

import logging

from raf.agent.run.providers import call_on_invoked
from raf.agent.run.run import PHASE_FAILED, PHASE_RECORDED, PHASE_RECORDING, PHASE_SET_UP, Run
from raf.agent.run.steps import store_turn
from raf.core.errors import UsageLimitExceeded
from raf.core.responses import FINISH_OTHER, AgentResponse, ChatResponse

log = logging.getLogger("raf.agent")


def as_agent_response(response: ChatResponse, run: Run) -> AgentResponse:
    """`response` as the agent's response in the run's session."""
    session_id = run.session.id if run.session is not None else None
    if isinstance(response, AgentResponse) and response.session_id == session_id:
        return response
    return AgentResponse(
        messages=response.messages,
        finish_reason=response.finish_reason,
        usage=response.usage,
        model_id=response.model_id,
        response_id=response.response_id,
        session_id=session_id,
    )


async def record_failure(run: Run, error: BaseException) -> None:
    """A run raised `error`: record it as a usage limit's stop or as a failure (unless
    it was the recording itself that failed: the providers heard of the run already)."""
    if run.phase is PHASE_RECORDING or run.phase is PHASE_RECORDED:
        return
    if isinstance(error, UsageLimitExceeded):
        await end_over_limit(run, error)
    else:
        await fail(run, error)


async def fail(run: Run, error: BaseException) -> None:
    """A run that raised: providers hear of it and the session keeps its state —
    except that when the model call failed after tools ran, the rounds that ran are
    stored (every call answered), so a retry does not run those tools again."""
    phase = run.phase
    run.phase = PHASE_FAILED
    approvals = run.context.approvals
    if phase is PHASE_SET_UP:
        approvals.restore_spent()
        return
    if error is run.model_error:
        partial = run.completed_rounds()
        if partial is not None:
            await store_turn(run, as_agent_response(partial, run), error)
            return
    if approvals.claim_stored:
        await record_claimed(run, error)
        return
    approvals.restore_spent()
    assert run.session is not None
    await call_on_invoked(run.agent, run.invoked, run.session, run.request, None, error)


async def record_claimed(run: Run, error: BaseException) -> None:
    """A run that failed after its claim was stored: the claim stands (another try
    would be a replay), so the turn is stored with every call answered."""
    run.answer_dangling(
        "the run stopped before this call's result was recorded "
        f"({type(error).__name__}: {error}); it may or may not have run"
    )
    run.finish_reason = FINISH_OTHER
    try:
        await store_turn(run, as_agent_response(run.chat_response(), run), error)
    except Exception as exc:  # the run's own error is the one to raise
        session_id = run.session.id if run.session is not None else None
        log.error("recording the claimed turn of session %r failed: %s", session_id, exc)


async def end_over_limit(run: Run, error: UsageLimitExceeded) -> None:
    """A usage limit stopped the run: what it did (every call answered) is stored as
    the run, and the error carries that response; before any model reply, nothing."""
    partial = error.response
    if run.phase is PHASE_SET_UP or not isinstance(partial, ChatResponse):
        await fail(run, error)
        return
    if not partial.messages:
        await fail(run, error)
        return
    run.phase = PHASE_FAILED
    error.response = await store_turn(run, as_agent_response(partial, run), error)
