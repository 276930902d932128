"""How a run ends, recorded: a finished run, a failed one, one whose claim on its
approvals stands, one stopped by a usage limit — into the session and its store."""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import Any

from raf.agent.run.providers import call_on_invoked
from raf.agent.run.run import PHASE_FAILED, PHASE_RECORDED, PHASE_RECORDING, PHASE_SET_UP, Run
from raf.agent.session_conflicts import save_turn
from raf.core.errors import UsageLimitExceeded
from raf.core.responses import FINISH_OTHER, AgentResponse, ChatResponse
from raf.core.sessions import AgentSession
from raf.core.tools import Tool

log = logging.getLogger("raf.agent")


async def finish(
    run: Run, result: AgentResponse, error: BaseException | None = None
) -> AgentResponse:
    """Record the run: pending approvals, providers' on_invoked, the store."""
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
            await finish(run, as_agent_response(partial, run), error)
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
        await finish(run, as_agent_response(run.chat_response(), run), error)
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
    error.response = await finish(run, as_agent_response(partial, run), error)


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
