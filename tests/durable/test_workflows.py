"""A workflow run as a DBOS workflow: queued, its human-input pause awaited durably in the
run, answered by `answer_workflow`."""

from __future__ import annotations

from pathlib import Path

from dbos import DBOS

from raf.agent.stores import SqliteSessionStore
from raf.durable import DurableRuntime, sqlite_url
from raf.workflow import (
    Executor,
    InputResponse,
    SqliteCheckpointStore,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    handler,
)


class Publish(Executor):
    """Publishes a draft once a human approves it."""

    @handler
    async def draft(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input({"draft": text}, bool)

    @handler
    async def decided(self, answer: InputResponse[bool], ctx: WorkflowContext[str]) -> None:
        verdict = "published" if answer.response else "held back"
        await ctx.yield_output(f"{answer.data['draft']}: {verdict}")


async def test_a_workflow_pause_waits_in_the_run_and_resumes_when_answered(
    tmp_path: Path,
) -> None:
    def build() -> Workflow:
        store = SqliteCheckpointStore(tmp_path / "checkpoints.sqlite")
        return WorkflowBuilder("publish", start=Publish()).with_checkpoint_store(store).build()

    runtime = DurableRuntime(
        [],
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
        database=sqlite_url(tmp_path / "dbos.sqlite"),
        workflows={"publish": build},
    )
    await runtime.launch()
    try:
        run_id = await runtime.start_workflow("publish", "owls at night")
        paused = await runtime.workflow_outcome(run_id, max_wait=60)
        assert paused.paused and paused.requests[0].data == {"draft": "owls at night"}
        status = await DBOS.get_workflow_status_async(run_id)
        assert status is not None and status.status == "PENDING"
        done = await runtime.answer_workflow(
            paused, {paused.requests[0].request_id: True}, max_wait=60
        )
        assert done.status == "completed" and done.turn == 1
        assert done.outputs == ["owls at night: published"]
        await (await DBOS.retrieve_workflow_async(run_id)).get_result()  # the run ends
    finally:
        runtime.shutdown()
