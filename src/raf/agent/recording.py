"""How a run ends, recorded: a finished turn, a failed one, one whose claim on its
approvals stands, one stopped by a usage limit — into the session and its store."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from raf.agent.providers import call_on_invoked
from raf.agent.session_conflicts import save_turn
from raf.agent.turn import Turn, agent_response, release_calls
from raf.agent.run import LoopState
from raf.core.errors import UsageLimitExceeded
from raf.core.responses import AgentResponse, ChatResponse, FinishReason

if TYPE_CHECKING:
    from raf.agent.agent import Agent

log = logging.getLogger("raf.agent")


async def finish(
    agent: Agent, turn: Turn, result: AgentResponse, error: BaseException | None = None
) -> AgentResponse:
    """Record the turn: pending approvals, providers' on_invoked, the store."""
    prepared = turn.prepared
    if prepared is None:  # an agent middleware answered without running the turn
        return result
    session = prepared.session
    closed = {p.call_id: p.name for p in session.pending_approvals}
    session.pending_approvals = result.pending_approvals
    for pending in session.pending_approvals:
        closed.pop(pending.call_id, None)
    release_calls(prepared.tools, closed, session)
    await call_on_invoked(agent, prepared.invoked, session, prepared.request, result, error)
    if agent.session_store is not None:
        await save_turn(agent.session_store, session, turn.options.conflict_retries)
    return result


async def fail(agent: Agent, turn: Turn, error: BaseException) -> None:
    """A run that raised: providers hear of it and the session keeps its state —
    except that when the model call failed after tools ran, the rounds that ran are
    stored (every call answered), so a retry does not run those tools again."""
    loop = turn.loop
    if loop is not None and turn.prepared is not None and error is loop.model_error:
        partial = loop.completed_rounds()
        if partial is not None:
            session = turn.prepared.session
            await finish(agent, turn, agent_response(partial, session), error)
            return
    if turn.claimed and loop is not None and turn.prepared is not None:
        await record_claimed(agent, turn, loop, error)
        return
    if turn.run.session is not None:
        turn.run.session.spent_approvals[:] = turn.spent_before
    if turn.prepared is not None:
        prepared = turn.prepared
        await call_on_invoked(
            agent, prepared.invoked, prepared.session, prepared.request, None, error
        )


async def record_claimed(agent: Agent, turn: Turn, loop: LoopState, error: BaseException) -> None:
    """A run that failed after its claim was stored: the claim stands (another try
    would be a replay), so the turn is stored with every call answered."""
    assert turn.prepared is not None
    loop.answer_dangling(
        "the run stopped before this call's result was recorded "
        f"({type(error).__name__}: {error}); it may or may not have run"
    )
    loop.finish_reason = FinishReason.OTHER
    try:
        await finish(agent, turn, agent_response(loop.response(), turn.prepared.session), error)
    except Exception as exc:  # the run's own error is the one to raise
        log.error(
            "recording the claimed turn of session %r failed: %s", turn.prepared.session.id, exc
        )


async def end_over_limit(agent: Agent, turn: Turn, error: UsageLimitExceeded) -> None:
    """A usage limit stopped the run: what it did (every call answered) is stored as
    the turn, and the error carries that response; before any model reply, nothing."""
    partial = error.response
    if turn.prepared is None or not isinstance(partial, ChatResponse) or not partial.messages:
        await fail(agent, turn, error)
        return
    session = turn.prepared.session
    error.response = await finish(agent, turn, agent_response(partial, session), error)
