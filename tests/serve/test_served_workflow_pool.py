"""A served workflow runs many times at once, each run on a workflow of its own, with
every checkpoint in the one store it was given; the UI starts its runs the same way."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from raf.core.errors import CheckpointError
from raf.serve.ui.workflows import WorkflowHost
from raf.serve.workflows import ServedWorkflow
from raf.stores.checkpoints import (
    InMemoryCheckpointStore,
    JsonFileCheckpointStore,
    SqliteCheckpointStore,
)
from raf.stores.urls import open_checkpoint_store
from raf.workflow import Executor, Workflow, WorkflowBuilder, WorkflowContext, handler
from raf.workflow.events import OutputEvent


class Meet(Executor):
    """Waits until `needed` runs are inside the workflow at once (or 5 s), then says so."""

    inside = 0

    def __init__(self, needed: int) -> None:
        super().__init__("meet")
        self.needed = needed

    @handler
    async def meet(self, text: str, ctx: WorkflowContext[str]) -> None:
        Meet.inside += 1
        for _ in range(100):
            if Meet.inside >= self.needed:
                break
            await asyncio.sleep(0.05)
        await ctx.yield_output(f"{text}: {'met' if Meet.inside >= self.needed else 'alone'}")


def build() -> Workflow:
    return WorkflowBuilder("meeting", start=Meet(2)).build()


async def outputs(served: ServedWorkflow, text: str) -> list[str]:
    return [e.data async for e in served.run_stream(text) if isinstance(e, OutputEvent)]


async def test_two_runs_at_once_each_get_a_workflow_of_their_own() -> None:
    Meet.inside = 0
    shared = InMemoryCheckpointStore()
    served = ServedWorkflow(build(), build=build, checkpoints=shared)
    both = await asyncio.wait_for(
        asyncio.gather(outputs(served, "a"), outputs(served, "b")), timeout=30
    )
    assert list(both) == [["a: met"], ["b: met"]]
    runs = {info.run_id for info in await shared.list()}
    assert len(runs) == 2  # both runs checkpointed in the store they were given
    assert await served.template.checkpoint_store.list() == []


async def test_a_workflow_object_serves_its_runs_in_turn() -> None:
    Meet.inside = 0
    served = ServedWorkflow(build())  # no way to build another: one run at a time
    both = await asyncio.wait_for(
        asyncio.gather(outputs(served, "a"), outputs(served, "b")), timeout=30
    )
    assert list(both) == [["a: alone"], ["b: met"]]  # the second waited; neither failed


async def test_the_ui_starts_two_runs_of_one_workflow_at_once() -> None:
    Meet.inside = 0
    host = WorkflowHost([ServedWorkflow(build(), build=build)])
    first = host.start("meeting", "me", input="a")
    second = host.start("meeting", "me", input="b")  # no 409 workflow_busy
    assert first.task is not None and second.task is not None
    await asyncio.wait_for(asyncio.gather(first.task, second.task), timeout=30)
    assert (first.status, second.status) == ("completed", "completed")
    said = [e["data"] for r in (first, second) for e in r.events if e["type"] == "OutputEvent"]
    assert said == ["a: met", "b: met"]


def test_a_checkpoint_store_is_named_as_a_session_store_is(tmp_path: Path) -> None:
    assert isinstance(open_checkpoint_store("memory:"), InMemoryCheckpointStore)
    file = open_checkpoint_store(str(tmp_path / "s.sqlite"))
    assert isinstance(file, SqliteCheckpointStore) and file.path == tmp_path / "s.sqlite"
    url = open_checkpoint_store(f"sqlite://{tmp_path}/t.db")
    assert isinstance(url, SqliteCheckpointStore) and url.path == tmp_path / "t.db"
    assert isinstance(open_checkpoint_store(str(tmp_path / "cps")), JsonFileCheckpointStore)
    with pytest.raises(CheckpointError, match="cannot be kept in Redis"):
        open_checkpoint_store("redis://127.0.0.1:6379")
    with pytest.raises(CheckpointError, match=r"unknown checkpoint store mongo://"):
        open_checkpoint_store("mongo://x")
    with pytest.raises(CheckpointError, match="is empty"):
        open_checkpoint_store("  ")
