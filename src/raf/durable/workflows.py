"""Workflows of raf.workflow as DBOS workflows: DBOS queues a run, resumes it after a
crash (in this worker or another) and waits durably for its human input; the workflow's
own checkpoints give the granularity: a resumed run goes on from its last superstep."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from dbos import DBOS

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
) -> dict[str, Any]:
    """Run a workflow until it completes or pauses, starting from its newest checkpoint
    when one is newer than where this turn began (the turn was interrupted by a crash)."""
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
        result = await workflow.run(checkpoint_id=from_checkpoint, responses=answers)
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
    }


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
    )


@DBOS.workflow(name=WORKFLOW_RUN_NAME)
async def workflow_run_workflow(request: dict[str, Any]) -> dict[str, Any]:
    """One durable workflow run: each turn (to completion or a pause) is a step; a pause
    waits for its answers on a DBOS message."""
    from raf.durable.runtime import current_runtime

    runtime = current_runtime()
    run_id = DBOS.workflow_id
    assert run_id is not None
    name = str(request["workflow"])
    checkpoint: str | None = None
    responses: dict[str, Any] | None = None
    turn = 0
    while True:

        async def turn_step(
            start: str | None = checkpoint, answers: dict[str, Any] | None = responses
        ) -> dict[str, Any]:
            try:
                return await advance(
                    runtime.workflows,
                    name,
                    run_id,
                    input=request.get("input"),
                    from_checkpoint=start,
                    responses=answers,
                )
            except Exception as exc:  # kept as data: an exception may not survive pickling
                return {"error": {"type": type(exc).__name__, "message": str(exc)}}

        out = await DBOS.run_step_async({"name": f"workflow:{name}"}, turn_step)
        await DBOS.set_event_async(f"turn-{turn}", out)
        if out.get("status") != "paused":
            return out
        answers = await DBOS.recv_async(RESPONSES_TOPIC, timeout_seconds=runtime.approval_wait)
        if answers is None:
            return out
        checkpoint, responses = out["checkpoint_id"], dict(answers)
        turn += 1
