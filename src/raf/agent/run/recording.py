"""How a run ends, recorded: a finished run, a failed one, one whose claim on its
approvals stands, one stopped by a usage limit — into the session and its store."""

from __future__ import annotations

import logging

from raf.agent.run.agent_run import (
    FAILED,
    RECORDED,
    SET_UP,
    AgentRun,
    agent_response,
    release_calls,
)
from raf.agent.run.providers import call_on_invoked
from raf.agent.run.state import LoopState
from raf.agent.session_conflicts import save_turn
from raf.core.errors import UsageLimitExceeded
from raf.core.responses import AgentResponse, ChatResponse, FinishReason

log = logging.getLogger("raf.agent")


async def finish(
    run: AgentRun, result: AgentResponse, error: BaseException | None = None
) -> AgentResponse:
    """Record the run: pending approvals, providers' on_invoked, the store."""
    if run.phase is SET_UP:  # an agent middleware answered without running it
        return result
    session = run.session
    if session.pending_approvals:  # else no call waited, so none is released
        closed = {p.call_id: p.name for p in session.pending_approvals}
        session.pending_approvals = result.pending_approvals
        for pending in session.pending_approvals:
            closed.pop(pending.call_id, None)
        release_calls(run.tools, closed, session)
    else:
        session.pending_approvals = result.pending_approvals
    await call_on_invoked(run.agent, run.invoked, session, run.request, result, error)
    store = run.options.session_store or run.agent.session_store
    if store is not None:
        await save_turn(store, session, run.options.conflict_retries)
    if error is None:
        run.phase = RECORDED
    return result


async def record_failure(run: AgentRun, error: BaseException) -> None:
    """A run raised `error`: record it as a usage limit's stop or as a failure."""
    if isinstance(error, UsageLimitExceeded):
        await end_over_limit(run, error)
    else:
        await fail(run, error)


async def fail(run: AgentRun, error: BaseException) -> None:
    """A run that raised: providers hear of it and the session keeps its state —
    except that when the model call failed after tools ran, the rounds that ran are
    stored (every call answered), so a retry does not run those tools again."""
    phase, loop = run.phase, run.loop
    run.phase = FAILED
    approvals = run.context.approvals
    if phase is SET_UP:
        approvals.restore_spent()
        return
    if loop is not None and error is loop.model_error:
        partial = loop.completed_rounds()
        if partial is not None:
            await finish(run, agent_response(partial, run.session), error)
            return
    if approvals.claim_stored and loop is not None:
        await record_claimed(run, loop, error)
        return
    approvals.restore_spent()
    await call_on_invoked(run.agent, run.invoked, run.session, run.request, None, error)


async def record_claimed(run: AgentRun, loop: LoopState, error: BaseException) -> None:
    """A run that failed after its claim was stored: the claim stands (another try
    would be a replay), so the turn is stored with every call answered."""
    loop.answer_dangling(
        "the run stopped before this call's result was recorded "
        f"({type(error).__name__}: {error}); it may or may not have run"
    )
    loop.finish_reason = FinishReason.OTHER
    try:
        await finish(run, agent_response(loop.response(), run.session), error)
    except Exception as exc:  # the run's own error is the one to raise
        log.error("recording the claimed turn of session %r failed: %s", run.session.id, exc)


async def end_over_limit(run: AgentRun, error: UsageLimitExceeded) -> None:
    """A usage limit stopped the run: what it did (every call answered) is stored as
    the run, and the error carries that response; before any model reply, nothing."""
    partial = error.response
    if run.phase is SET_UP or not isinstance(partial, ChatResponse):
        await fail(run, error)
        return
    if not partial.messages:
        await fail(run, error)
        return
    run.phase = FAILED
    error.response = await finish(run, agent_response(partial, run.session), error)
