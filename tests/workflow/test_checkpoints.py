"""Checkpoints after every superstep, in plain JSON, in three stores; resuming; a changed
graph refused; values that have no JSON form refused clearly."""

from __future__ import annotations

import enum
import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import pytest

from raf import ChatMessage
from raf.workflow import (
    CheckpointError,
    CheckpointNotFoundError,
    CheckpointStore,
    Executor,
    GraphChangedError,
    InMemoryCheckpointStore,
    JsonFileCheckpointStore,
    SqliteCheckpointStore,
    SuperstepCompleted,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunError,
    executor,
    handler,
    latest_checkpoint,
)
from raf.workflow.workflow import Workflow


class Priority(enum.Enum):
    """A message field that is an enum."""

    LOW = "low"
    HIGH = "high"


@dataclass(kw_only=True, slots=True)
class Ticket:
    """A dataclass message with nested raf and enum values."""

    title: str
    priority: Priority
    notes: list[ChatMessage]


CALLS: list[str] = []


@executor
def open_ticket(title: str) -> Ticket:
    CALLS.append("open")
    return Ticket(title=title, priority=Priority.HIGH, notes=[ChatMessage.user("first")])


class Annotate(Executor):
    """Counts the tickets it saw in its own state (kept in checkpoints)."""

    def __init__(self) -> None:
        super().__init__("annotate")
        self.seen = 0

    @handler
    async def run(self, ticket: Ticket, ctx: WorkflowContext[Ticket]) -> None:
        CALLS.append("annotate")
        self.seen += 1
        ctx.set_state("annotated", ticket.title)
        ticket.notes.append(ChatMessage.assistant(f"seen {self.seen}"))
        await ctx.send_message(ticket)

    def snapshot_state(self) -> object:
        return {"seen": self.seen}

    def restore_state(self, state: object) -> None:
        assert isinstance(state, dict)
        self.seen = state["seen"]


@executor
def close_ticket(ticket: Ticket, ctx: WorkflowContext) -> str:  # type: ignore[type-arg]
    CALLS.append("close")
    annotated = ctx.get_state("annotated")
    return f"{ticket.title} [{ticket.priority.value}] {len(ticket.notes)} notes, {annotated}"


def build(store: CheckpointStore) -> Workflow:
    annotate = Annotate()
    return (
        WorkflowBuilder("tickets", start=open_ticket)
        .add_chain([open_ticket, annotate, close_ticket])
        .with_checkpoint_store(store)
        .build()
    )


@pytest.fixture(autouse=True)
def _clear() -> None:
    CALLS.clear()


@pytest.fixture(params=["memory", "json", "sqlite"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> CheckpointStore:
    if request.param == "memory":
        return InMemoryCheckpointStore()
    if request.param == "json":
        return JsonFileCheckpointStore(tmp_path / "checkpoints")
    return SqliteCheckpointStore(tmp_path / "cp.sqlite")


async def test_a_checkpoint_follows_every_superstep(store: CheckpointStore) -> None:
    workflow = build(store)
    result = await workflow.run("printer jam")
    assert result.outputs == ["printer jam [high] 2 notes, printer jam"]
    infos = await store.list(result.run_id)
    # The start, one per superstep, then the final state.
    assert [i.superstep for i in infos] == [3, 3, 2, 1, 0]
    assert [i.status for i in infos][:2] == ["completed", "running"]
    step_ids = [e.checkpoint_id for e in result.events if isinstance(e, SuperstepCompleted)]
    assert len(step_ids) == 3 and all(step_ids)


async def test_resume_from_a_middle_checkpoint_runs_only_what_is_left(
    store: CheckpointStore,
) -> None:
    workflow = build(store)
    first = await workflow.run("printer jam")
    after_step_1 = next(i for i in await store.list(first.run_id) if i.superstep == 1)
    CALLS.clear()
    # A fresh graph (new node objects) resumes: node state and shared state come back.
    again = build(store)
    result = await again.run(checkpoint_id=after_step_1.id)
    assert CALLS == ["annotate", "close"]
    assert result.outputs == ["printer jam [high] 2 notes, printer jam"]
    assert result.run_id == first.run_id


async def test_node_state_is_restored_from_the_checkpoint(store: CheckpointStore) -> None:
    workflow = build(store)
    first = await workflow.run("a")
    after_step_2 = next(i for i in await store.list(first.run_id) if i.superstep == 2)
    again = build(store)
    annotate = again.nodes["annotate"]
    assert isinstance(annotate, Annotate) and annotate.seen == 0
    await again.run(checkpoint_id=after_step_2.id)
    assert annotate.seen == 1


async def test_checkpoints_are_plain_json_without_pickle(tmp_path: Path) -> None:
    store = JsonFileCheckpointStore(tmp_path)
    result = await build(store).run("jam")
    cp_file = next(
        p for p in tmp_path.glob("*.json") if json.loads(p.read_text())["superstep"] == 2
    )
    data = json.loads(cp_file.read_text())
    (pending,) = data["pending"]
    assert pending["target"] == "close_ticket"
    message = pending["message"]
    assert message["$type"].endswith(":Ticket")
    assert message["value"]["priority"] == {"$type": f"{__name__}:Priority", "value": "high"}
    assert message["value"]["notes"][0] == {
        "$type": "raf.message",
        "value": {"role": "user", "contents": [{"type": "text", "text": "first"}]},
    }
    assert data["node_states"]["annotate"] == {"seen": 1}
    assert data["shared_state"] == {"annotated": "jam"}
    assert result.status == "completed"


async def test_sqlite_is_the_default_durable_store(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    workflow = (
        WorkflowBuilder("d", start=open_ticket)
        .add_edge(open_ticket, Annotate())
        .with_checkpoint_store()
        .build()
    )
    result = await workflow.run("jam")
    rows = sqlite3.connect(tmp_path / ".raf" / "checkpoints.sqlite").execute(
        "SELECT COUNT(*) FROM raf_checkpoints WHERE run_id = ?", (result.run_id,)
    )
    assert rows.fetchone()[0] == 4


async def test_a_changed_graph_is_refused_with_what_changed(store: CheckpointStore) -> None:
    first = await build(store).run("jam")
    checkpoint = (await store.list(first.run_id))[-1]

    @executor(id="close_ticket")
    def different(ticket: Ticket) -> str:
        return "other"

    changed = (
        WorkflowBuilder("tickets", start=open_ticket)
        .add_chain([open_ticket, Annotate(), different])
        .with_checkpoint_store(store)
        .build()
    )
    with pytest.raises(GraphChangedError, match="nodes changed: close_ticket"):
        await changed.run(checkpoint_id=checkpoint.id)
    extra = (
        WorkflowBuilder("tickets", start=open_ticket)
        .add_chain([open_ticket, Annotate(), close_ticket])
        .add_edge(open_ticket, "audit")
        .add_executor(audit_node("audit"))
        .with_checkpoint_store(store)
        .build()
    )
    with pytest.raises(GraphChangedError, match="nodes added: audit"):
        await extra.run(checkpoint_id=checkpoint.id)


def audit_node(name: str) -> Executor:
    from raf.workflow import FunctionExecutor

    def audit(ticket: Ticket) -> None:
        return None

    return FunctionExecutor(audit, id=name)


async def test_resuming_a_completed_run_or_a_missing_checkpoint_is_refused(
    store: CheckpointStore,
) -> None:
    workflow = build(store)
    result = await workflow.run("jam")
    with pytest.raises(CheckpointError, match="already completed"):
        await workflow.run(checkpoint_id=result.checkpoint_id)
    with pytest.raises(CheckpointNotFoundError):
        await workflow.run(checkpoint_id="nope")
    latest = await latest_checkpoint(store, result.run_id)
    assert latest.id == result.checkpoint_id


class Opaque:
    """A value with no JSON form."""


async def test_a_message_with_no_json_form_fails_clearly_and_keeps_the_last_checkpoint() -> None:
    @executor
    def make(text: str) -> Opaque:
        return Opaque()

    @executor
    def use(value: Opaque) -> str:
        return "never"

    store = InMemoryCheckpointStore()
    workflow = (
        WorkflowBuilder("o", start=make).add_edge(make, use).with_checkpoint_store(store).build()
    )
    with pytest.raises(WorkflowRunError, match="Opaque cannot be kept in a checkpoint") as info:
        await workflow.run("x")
    assert info.value.checkpoint_id is not None
    kept = await store.load(info.value.checkpoint_id)
    assert kept.superstep == 0 and kept.pending[0]["target"] == "make"


async def test_a_tagged_type_the_graph_does_not_declare_is_refused_on_resume() -> None:
    store = InMemoryCheckpointStore()
    workflow = build(store)
    first = await workflow.run("jam")
    step_2 = next(i for i in await store.list(first.run_id) if i.superstep == 2)
    checkpoint = await store.load(step_2.id)
    checkpoint.pending[0]["message"]["$type"] = "os:system"
    await store.save(checkpoint)
    with pytest.raises(CheckpointError, match="'os:system', which no handler of this graph"):
        await build(store).run(checkpoint_id=step_2.id)
