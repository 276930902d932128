"""An answer to a paused run is taken once, in every checkpoint store: of concurrent
resumes answering one request exactly one runs the answering node, a late answer is
refused by name, and the same claimant may take its answer again (a retried step)."""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from raf.workflow import (
    AnswerClaimedError,
    CheckpointStore,
    Executor,
    InMemoryCheckpointStore,
    InputResponse,
    JsonFileCheckpointStore,
    PostgresCheckpointStore,
    SqliteCheckpointStore,
    Workflow,
    WorkflowBuilder,
    WorkflowContext,
    WorkflowRunError,
    handler,
)

ANSWERED: list[str] = []


class Ask(Executor):
    """Asks one question; the answer is recorded when it arrives."""

    def __init__(self) -> None:
        super().__init__("ask")

    @handler
    async def start(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input({"q": text}, str)

    @handler
    async def answered(self, answer: InputResponse[str], ctx: WorkflowContext[str]) -> None:
        await asyncio.sleep(0)  # let a concurrent resume interleave here
        if answer.response == "boom":
            raise ValueError("the answer broke the node")
        ANSWERED.append(answer.response)
        await ctx.yield_output(answer.response)


def build(store: CheckpointStore) -> Workflow:
    return WorkflowBuilder("asks", start=Ask()).with_checkpoint_store(store).build()


@pytest.fixture(params=["memory", "json", "sqlite", "postgres"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[CheckpointStore]:
    ANSWERED.clear()
    if request.param == "memory":
        yield InMemoryCheckpointStore()
    elif request.param == "json":
        yield JsonFileCheckpointStore(tmp_path / "checkpoints")
    elif request.param == "sqlite":
        yield SqliteCheckpointStore(tmp_path / "cp.sqlite")
    else:
        url = request.getfixturevalue("postgres_server").url
        postgres = PostgresCheckpointStore(url, table=f"cp_{uuid.uuid4().hex[:12]}")
        yield postgres
        await postgres.close()


async def test_concurrent_answers_run_the_node_once_and_a_late_one_is_refused(
    store: CheckpointStore,
) -> None:
    paused = await build(store).run("ship?")
    (request,) = paused.requests
    cp = paused.checkpoint_id
    assert cp is not None
    results = await asyncio.gather(
        *(
            build(store).run(checkpoint_id=cp, responses={request.request_id: f"yes {i}"})
            for i in range(5)
        ),
        return_exceptions=True,
    )
    done = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, AnswerClaimedError)]
    assert len(done) == 1 and len(refused) == 4, results
    assert len(ANSWERED) == 1
    with pytest.raises(AnswerClaimedError, match="already answered") as late:
        await build(store).run(checkpoint_id=cp, responses={request.request_id: "late"})
    assert late.value.checkpoint_id == cp and late.value.request_id == request.request_id
    assert f"request {request.request_id!r} of checkpoint {cp!r}" in str(late.value)
    assert len(ANSWERED) == 1


async def test_the_same_claimant_may_take_its_answer_again(store: CheckpointStore) -> None:
    paused = await build(store).run("ship?")
    (request,) = paused.requests
    assert paused.checkpoint_id is not None
    answer = {request.request_id: "yes"}
    for _ in range(2):  # a retried answering step, after a crash before its checkpoint
        await build(store).run(checkpoint_id=paused.checkpoint_id, responses=answer, claimant="s1")
    with pytest.raises(AnswerClaimedError):
        await build(store).run(checkpoint_id=paused.checkpoint_id, responses=answer, claimant="s2")


async def test_a_claim_is_all_or_none(store: CheckpointStore) -> None:
    await store.claim("cp1", ["r2"], "first")
    with pytest.raises(AnswerClaimedError) as refused:
        await store.claim("cp1", ["r1", "r2"], "second")
    assert refused.value.request_id == "r2"
    await store.claim("cp1", ["r1"], "third")  # r1 was not kept by the refused claim
    with pytest.raises(AnswerClaimedError):
        await store.claim("cp1", ["r1"], "second")


async def test_an_answer_whose_run_fails_at_once_can_be_given_again(store: CheckpointStore) -> None:
    paused = await build(store).run("ship?")
    (request,) = paused.requests
    cp = paused.checkpoint_id
    assert cp is not None
    with pytest.raises(WorkflowRunError, match="the answer broke the node") as failed:
        await build(store).run(checkpoint_id=cp, responses={request.request_id: "boom"})
    assert failed.value.checkpoint_id == cp  # nothing came of the answer: resume here
    done = await build(store).run(checkpoint_id=cp, responses={request.request_id: "yes"})
    assert done.status == "completed" and ANSWERED == ["yes"]
    with pytest.raises(AnswerClaimedError):
        await build(store).run(checkpoint_id=cp, responses={request.request_id: "again"})


async def test_release_gives_back_only_the_claimant_s_own(store: CheckpointStore) -> None:
    await store.claim("cp1", ["r1", "r2"], "first")
    await store.release("cp1", ["r1", "r2"], "someone else")
    with pytest.raises(AnswerClaimedError):
        await store.claim("cp1", ["r1"], "second")
    await store.release("cp1", ["r1"], "first")
    await store.claim("cp1", ["r1"], "second")
    with pytest.raises(AnswerClaimedError):
        await store.claim("cp1", ["r2"], "second")


def test_claims_racing_on_one_sqlite_file_have_one_winner_and_no_lock_errors(
    tmp_path: Path,
) -> None:
    """Eight claimants, each with a store and a connection of its own (as processes have),
    race through the same 150 answers: each answer has exactly one winner and every other
    claimant is refused by name. A claim that read before taking the write lock would
    meet "database is locked" when another claimant wrote in between."""
    path = tmp_path / "cp.sqlite"
    asyncio.run(SqliteCheckpointStore(path).claim("warm", ["r"], "warm"))  # tables exist
    won: dict[str, list[int]] = {}
    failures: list[BaseException] = []
    start = threading.Barrier(8, timeout=30)

    def claimant(i: int) -> None:
        async def race() -> None:
            store = SqliteCheckpointStore(path)
            await store.claim("warm", ["r"], "warm")  # connected before the race
            start.wait()
            for n in range(150):
                try:
                    await store.claim(f"cp{n}", ["r1"], f"claimant {i}")
                except AnswerClaimedError:
                    continue
                won.setdefault(f"cp{n}", []).append(i)

        try:
            asyncio.run(race())
        except BaseException as exc:  # reported by the assertion below
            failures.append(exc)

    threads = [threading.Thread(target=claimant, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert not failures, failures
    assert len(won) == 150 and all(len(w) == 1 for w in won.values()), won
