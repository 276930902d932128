"""Workflows of raf.workflow run durably, one turn at a time: a turn runs the workflow to
its end or its next pause, starting from its newest checkpoint, so a turn resumed after a
crash goes on from its last superstep. `DurableRuntime` makes each turn a DBOS step of
one DBOS workflow per run, which waits durably for the human input between turns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from raf.core.errors import RafError
from raf.stores.checkpoints import latest_checkpoint
from raf.workflow.codec import decode, encode
from raf.workflow.context import InputRequest
from raf.workflow.errors import CheckpointNotFoundError

if TYPE_CHECKING:
    from raf.workflow.workflow import Workflow

WORKFLOW_RUN_NAME = "raf.workflow_run"
RESPONSES_TOPIC = "raf.workflow.responses"
"""The DBOS message topic on which a paused workflow run receives its answers."""

WorkflowFactory = Callable[[], "Workflow"]
"""Builds the workflow afresh: one workflow object serves one run at a time."""


@dataclass(kw_only=True, slots=True)
class WorkflowOutcome:
    """One turn of a durable workflow run: completed with outputs, or paused on requests."""

    run_id: str
    turn: int
    status: str
    outputs: list[Any] = field(default_factory=list)
    requests: list[InputRequest] = field(default_factory=list)
    checkpoint_id: str | None = None
    workflow: str = ""
    """The name of the workflow that runs (its checkpoint store claims the answers)."""

    @property
    def paused(self) -> bool:
        return self.status == "paused"


def workflow_queue_name(name: str) -> str:
    """The DBOS queue the runs of one workflow wait in."""
    return f"raf-workflow-{name}"


def build_workflow(factories: Mapping[str, WorkflowFactory], name: str) -> Workflow:
    factory = factories.get(name)
    if factory is None:
        known = ", ".join(sorted(factories)) or "none"
        raise RafError(f"no workflow named {name!r} runs durably here (known: {known})")
    return factory()


async def advance(
    factories: Mapping[str, WorkflowFactory],
    name: str,
    run_id: str,
    *,
    input: Any,
    from_checkpoint: str | None,
    responses: dict[str, Any] | None,
    claimant: str | None = None,
) -> dict[str, Any]:
    """Run a workflow until it completes or pauses, starting from its newest checkpoint
    when one is newer than where this turn began (the turn was interrupted by a crash).
    The answers are claimed for `claimant`, the one who sent them, so a retried turn
    takes them again while nobody else can."""
    workflow = build_workflow(factories, name)
    store = workflow.checkpoint_store
    try:
        newest: str | None = (await latest_checkpoint(store, run_id)).id
    except CheckpointNotFoundError:
        newest = None
    if newest is not None and newest != from_checkpoint:
        result = await workflow.run(checkpoint_id=newest, run_id=run_id)
    elif from_checkpoint is not None:
        answers = {k: decode(v, workflow.types) for k, v in (responses or {}).items()}
        result = await workflow.run(
            checkpoint_id=from_checkpoint, responses=answers, claimant=claimant
        )
    else:
        result = await workflow.run(decode(input, workflow.types), run_id=run_id)
    return {
        "status": result.status,
        "outputs": encode(result.outputs),
        "requests": [
            {
                "request_id": r.request_id,
                "node": r.node,
                "data": encode(r.data),
                "response_type": r.response_type,
            }
            for r in result.requests
        ],
        "checkpoint_id": result.checkpoint_id,
        "workflow": name,
    }


def answers_message(responses: dict[str, Any], claimant: str) -> dict[str, Any]:
    """The DBOS message that carries answers to a paused run, with who claimed them."""
    return {"claimant": claimant, "responses": responses}


def read_answers(message: Any, default_claimant: str) -> tuple[dict[str, Any], str]:
    """The answers and claimant of a message (a bare mapping of answers, as sent by hand,
    is claimed for `default_claimant`)."""
    if isinstance(message, dict) and set(message) == {"claimant", "responses"}:
        return dict(message["responses"]), str(message["claimant"])
    return dict(message), default_claimant


def outcome_of(run_id: str, turn: int, data: dict[str, Any]) -> WorkflowOutcome:
    """The outcome a turn event holds; a RafError when the run failed."""
    error = data.get("error")
    if error is not None:
        raise RafError(
            f"durable workflow run {run_id!r} failed: {error['type']}: {error['message']}"
        )
    return WorkflowOutcome(
        run_id=run_id,
        turn=turn,
        status=str(data["status"]),
        outputs=list(data["outputs"]),
        requests=[InputRequest(**r) for r in data["requests"]],
        checkpoint_id=data.get("checkpoint_id"),
        workflow=str(data.get("workflow", "")),
    )
