"""Run records and their events: the same contract in every store (`SessionRuns`), and
one arrival order and one record seen through every handle of a shared store."""

from __future__ import annotations

import asyncio

import pytest

from raf.stores.runs import DONE, RUNNING, LocalRuns, RunRecord, SessionRuns, runs_of
from tests.stores.conftest import StoreSpot


def _runs(spot: StoreSpot) -> SessionRuns:
    return runs_of(spot.open())


def run(run_id: str, session: str = "s1") -> RunRecord:
    return RunRecord(id=run_id, session=session, agent="helper", owner="o", if_busy="enqueue")


async def test_runs_are_numbered_in_arrival_order_and_listed_per_session(spot: StoreSpot) -> None:
    runs = _runs(spot)
    first = await runs.add_run(run("r1"))
    second = await runs.add_run(run("r2"))
    await runs.add_run(run("r3", session="s2"))
    assert 0 < first.seq < second.seq
    assert [r.id for r in await runs.session_runs("s1")] == ["r1", "r2"]
    first.state, first.ended_at = DONE, 5.0
    await runs.save_run(first)
    assert [r.id for r in await runs.session_runs("s1", active=True)] == ["r2"]
    assert await runs.load_run("missing") is None


async def test_a_save_keeps_the_seq_and_never_undoes_a_cancel(spot: StoreSpot) -> None:
    runs = _runs(spot)
    added = await runs.add_run(run("r1"))
    asked = await runs.cancel_run("r1", "stop, please")
    assert asked is not None and asked.cancel == "stop, please"
    added.state = RUNNING
    added.extra["input"] = ["hello"]
    await runs.save_run(added)  # written by the run, which had not seen the cancel
    loaded = await runs.load_run("r1")
    assert loaded is not None
    assert (loaded.state, loaded.cancel, loaded.seq) == (RUNNING, "stop, please", added.seq)
    assert loaded.extra == {"input": ["hello"]}
    loaded.state, loaded.ended_at = DONE, 1.0
    await runs.save_run(loaded)
    ended = await runs.cancel_run("r1", "too late")
    assert ended is not None and ended.cancel == "stop, please"  # an ended run keeps its own


async def test_events_are_read_after_a_number_and_purged_past_retention(spot: StoreSpot) -> None:
    runs = _runs(spot)
    added = await runs.add_run(run("r1"))
    await runs.add_run_events("r1", 1, ['{"n":1}', '{"n":2}'])
    await runs.add_run_events("r1", 3, ['{"n":3}'])
    assert await runs.run_events("r1", 1) == [(2, '{"n":2}'), (3, '{"n":3}')]
    assert await runs.run_events("r1", 0, limit=1) == [(1, '{"n":1}')]
    assert await runs.purge_runs(10.0) == 0  # it has not ended
    added.state, added.ended_at = DONE, 5.0
    await runs.save_run(added)
    assert await runs.purge_runs(4.0) == 0  # it ended after that
    assert await runs.purge_runs(10.0) == 1
    expired = await runs.load_run("r1")
    assert expired is not None and expired.expired and expired.state == DONE
    assert await runs.run_events("r1", 0) == []


async def test_handles_of_a_shared_store_see_one_order(shared_spot: StoreSpot) -> None:
    handles = [runs_of(shared_spot.open()) for _ in range(3)]
    if shared_spot.kind == "json":  # the folder store keeps runs in each process (runs_of warns)
        await handles[0].add_run(run("r0"))
        assert await handles[1].session_runs("s1") == []
        return
    added = await asyncio.gather(*(handles[i % 3].add_run(run(f"r{i}")) for i in range(12)))
    assert len({r.seq for r in added}) == 12
    listed = await handles[0].session_runs("s1")
    assert [r.id for r in listed] == [r.id for r in sorted(added, key=lambda r: r.seq)]


def test_a_store_without_runs_keeps_them_in_this_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Bare:
        async def save(self, session: object) -> None: ...

        async def load(self, session_id: str) -> object: ...

        async def delete(self, session_id: str) -> bool:
            return False

        async def list(self) -> list[str]:
            return []

    found = runs_of(Bare())  # type: ignore[arg-type]
    assert isinstance(found, LocalRuns)
    assert "keeps no runs" in caplog.text
