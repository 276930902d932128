"""A workflow run as a DBOS workflow: queued, its human-input pause awaited durably in the
run, answered by `answer_workflow`."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from dbos import DBOS

from raf.durable import DurableRuntime, sqlite_url
from raf.durable.workflows import WorkflowOutcome
from raf.stores.sessions import SqliteSessionStore
from raf.workflow import (
    AnswerClaimedError,
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


DECIDED: list[bool] = []


class CountedPublish(Publish):
    """Publish, recording each time the answering handler runs."""

    @handler
    async def decided(self, answer: InputResponse[bool], ctx: WorkflowContext[str]) -> None:
        DECIDED.append(answer.response)
        await ctx.yield_output(f"{answer.data['draft']}: decided")


async def test_two_answers_to_one_durable_pause_run_the_node_once(tmp_path: Path) -> None:
    DECIDED.clear()

    def build() -> Workflow:
        store = SqliteCheckpointStore(tmp_path / "checkpoints.sqlite")
        start = CountedPublish("publish")
        return WorkflowBuilder("publish", start=start).with_checkpoint_store(store).build()

    runtime = DurableRuntime(
        [],
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
        database=sqlite_url(tmp_path / "dbos.sqlite"),
        workflows={"publish": build},
    )
    await runtime.launch()
    try:
        run_id = await runtime.start_workflow("publish", "owls")
        paused = await runtime.workflow_outcome(run_id, max_wait=60)
        assert paused.workflow == "publish"
        answer = {paused.requests[0].request_id: True}
        results = await asyncio.gather(
            runtime.answer_workflow(paused, answer, max_wait=60),
            runtime.answer_workflow(paused, answer, max_wait=60),
            return_exceptions=True,
        )
        refused = [r for r in results if isinstance(r, AnswerClaimedError)]
        done = [r for r in results if isinstance(r, WorkflowOutcome)]
        assert len(refused) == 1 and len(done) == 1, results
        assert done[0].status == "completed"
        with pytest.raises(AnswerClaimedError, match="already answered"):
            await runtime.answer_workflow(paused, answer, max_wait=5)
        await (await DBOS.retrieve_workflow_async(run_id)).get_result()
        assert DECIDED == [True]
        for name in ("dbos.sqlite", "checkpoints.sqlite"):  # owner only
            assert (tmp_path / name).stat().st_mode & 0o777 == 0o600, name
    finally:
        runtime.shutdown()
