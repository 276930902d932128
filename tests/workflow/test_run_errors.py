"""Bad input found only at run time: each a clear error naming what is wrong, with the
last good checkpoint intact and resumable."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import BaseModel

from raf.workflow import (
    CheckpointError,
    Executor,
    InMemoryCheckpointStore,
    InputResponse,
    SqliteCheckpointStore,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowError,
    WorkflowRunError,
    executor,
    handler,
)


@executor
def first(text: str) -> str:
    return text


@executor
def second(text: str) -> str:
    return f"{text}!"


async def test_a_condition_that_raises_names_its_edge() -> None:
    def broken(message: str) -> bool:
        raise KeyError("field")

    workflow = WorkflowBuilder("c", start=first).add_edge(first, second, condition=broken).build()
    with pytest.raises(WorkflowRunError, match=r"condition of edge:first->second failed: KeyError"):
        await workflow.run("x")


async def test_a_selector_that_picks_a_stranger_is_refused() -> None:
    workflow = (
        WorkflowBuilder("s", start=first)
        .add_fan_out(first, [second], selector=lambda m, targets: ["ghost"])
        .build()
    )
    with pytest.raises(WorkflowRunError, match=r"selector picked \['ghost'\]"):
        await workflow.run("x")


async def test_sending_to_a_node_without_an_edge_is_refused() -> None:
    class Stray(Executor):
        @handler
        async def run(self, text: str, ctx: WorkflowContext[str]) -> None:
            await ctx.send_message(text, target="first")

    stray = Stray()
    workflow = WorkflowBuilder("t", start=stray).add_edge(stray, second).build()
    with pytest.raises(WorkflowRunError, match="'stray' sent a message to 'first' but has no edge"):
        await workflow.run("x")


async def test_a_run_past_max_supersteps_fails() -> None:
    class Again(Executor):
        @handler
        async def run(self, n: int, ctx: WorkflowContext[int]) -> None:
            await ctx.send_message(n + 1)

    again = Again()
    workflow = (
        WorkflowBuilder("forever", start=again)
        .add_loop(again, again, max_iterations=1000)
        .with_max_supersteps(5)
        .build()
    )
    with pytest.raises(WorkflowRunError, match="ran 5 supersteps without finishing") as info:
        await workflow.run(0)
    assert info.value.superstep == 5


async def test_resume_arguments_are_checked() -> None:
    workflow = WorkflowBuilder("a", start=first).build()
    with pytest.raises(WorkflowError, match="pass its checkpoint_id too"):
        await workflow.run("x", responses={"r": 1})
    done = await workflow.run("x")
    with pytest.raises(WorkflowError, match="pass no new input"):
        await workflow.run("y", checkpoint_id=done.checkpoint_id)


async def test_a_failed_superstep_resumes_from_the_last_good_checkpoint() -> None:
    attempts: list[str] = []

    @executor
    def shaky(text: str) -> str:
        attempts.append(text)
        if len(attempts) == 1:
            raise ConnectionError("service down")
        return f"{text} shipped"

    store = InMemoryCheckpointStore()
    workflow = (
        WorkflowBuilder("r", start=first)
        .add_edge(first, shaky)
        .with_checkpoint_store(store)
        .build()
    )
    with pytest.raises(WorkflowRunError, match="service down") as info:
        await workflow.run("order")
    assert info.value.node == "shaky" and info.value.superstep == 2
    resumed = await workflow.run(checkpoint_id=info.value.checkpoint_id)
    assert resumed.outputs == ["order shipped"] and attempts == ["order", "order"]


class Pay(Executor):
    """Asks for confirmation, then the payment is refused."""

    @handler
    async def ask(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input(f"pay for {text}?", bool)

    @handler
    async def pay(self, answer: InputResponse[bool], ctx: WorkflowContext[str]) -> None:
        raise RuntimeError("payment refused")


async def test_compensation_recorded_before_a_pause_runs_after_the_resume() -> None:
    undone: list[str] = []

    @executor
    def reserve(text: str) -> str:
        return f"{text} reserved"

    store = InMemoryCheckpointStore()

    def build() -> Workflow:
        pay = Pay()
        return (
            WorkflowBuilder("saga", start=reserve)
            .add_edge(reserve, pay)
            .with_compensation(reserve, lambda m: undone.append(f"release {m}"))
            .with_checkpoint_store(store)
            .build()
        )

    paused = await build().run("seat")
    (request,) = paused.requests
    # Another process builds the graph again and answers: the compensation is known.
    with pytest.raises(WorkflowRunError, match="payment refused"):
        await build().run(checkpoint_id=paused.checkpoint_id, responses={request.request_id: True})
    assert undone == ["release seat"]
    # Undone work is not resumed: every checkpoint of the run is refused now.
    with pytest.raises(CheckpointError, match="compensated"):
        await build().run(checkpoint_id=paused.checkpoint_id, responses={request.request_id: True})
    assert undone == ["release seat"]


class Invoice(BaseModel):
    """A pydantic message."""

    number: int
    lines: list[str]


@executor
def make_invoice(text: str) -> Invoice:
    return Invoice(number=7, lines=text.split())


@executor
def total(invoice: Invoice) -> str:
    return f"#{invoice.number}: {len(invoice.lines)} lines"


async def test_pydantic_messages_survive_a_sqlite_checkpoint(tmp_path: Path) -> None:
    store = SqliteCheckpointStore(tmp_path / "cp.sqlite")
    workflow = (
        WorkflowBuilder("inv", start=make_invoice)
        .add_edge(make_invoice, total)
        .with_checkpoint_store(store)
        .build()
    )
    done = await workflow.run("a b c")
    step_1 = next(i for i in await store.list(done.run_id) if i.superstep == 1)
    again = (
        WorkflowBuilder("inv", start=make_invoice)
        .add_edge(make_invoice, total)
        .with_checkpoint_store(store)
        .build()
    )
    assert (await again.run(checkpoint_id=step_1.id)).outputs == ["#7: 3 lines"]


async def test_leaving_a_stream_early_stops_the_run_and_frees_the_workflow() -> None:
    workflow = WorkflowBuilder("s", start=first).add_edge(first, second).build()
    stream = workflow.run_stream("x")
    async for _event in stream:
        break
    await stream.aclose()  # type: ignore[attr-defined]
    assert (await workflow.run("y")).outputs == ["y!"]
