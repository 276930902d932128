"""`change_record`: a record read, changed and saved under the revision check, read again
when another writer saved it in between, given up after its tries."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from raf import (
    AgentSession,
    InMemorySessionStore,
    SessionConflictError,
    SessionNotFoundError,
    SessionStore,
    SqliteSessionStore,
)
from raf.stores.records import SAVE_TRIES, change_record
from tests.stores.store_kinds import close_store


class Contested:
    """A store whose every read is followed by another worker's write of the same record
    (through its own handle) while `writes` lasts: the reader's save then conflicts."""

    def __init__(self, store: SessionStore, other: SessionStore, writes: int) -> None:
        self.store = store
        self.other = other
        self.writes = writes

    async def load(self, session_id: str) -> AgentSession:
        record = await self.store.load(session_id)
        if self.writes > 0:
            self.writes -= 1
            theirs = await self.other.load(session_id)
            theirs.metadata["theirs"] = theirs.metadata.get("theirs", 0) + 1
            await self.other.save(theirs)
        return record

    async def save(self, session: AgentSession) -> None:
        await self.store.save(session)

    async def delete(self, session_id: str) -> bool:
        return await self.store.delete(session_id)

    async def list(self) -> list[str]:
        return await self.store.list()


@pytest.fixture(params=["memory", "sqlite"])
async def handles(
    request: pytest.FixtureRequest, tmp_path: Path
) -> AsyncIterator[tuple[SessionStore, SessionStore]]:
    """Two handles on one store (the memory store can only share itself)."""
    if request.param == "memory":
        memory = InMemorySessionStore()
        yield memory, memory
        return
    one = SqliteSessionStore(tmp_path / "s.sqlite")
    two = SqliteSessionStore(tmp_path / "s.sqlite")
    yield one, two
    await close_store(one)
    await close_store(two)


async def test_a_lost_save_is_tried_again_from_a_fresh_read(
    handles: tuple[SessionStore, SessionStore],
) -> None:
    store, other = handles
    await store.save(AgentSession(id="r", metadata={"theirs": 0}))
    seen: list[int] = []

    def change(record: AgentSession) -> bool:
        seen.append(record.metadata["theirs"])
        record.metadata["mine"] = True
        return True

    await change_record(Contested(store, other, writes=2), "r", change)
    kept = await store.load("r")
    assert kept.metadata == {"theirs": 2, "mine": True}
    # each round saw the record as the other writer had left it before that round
    assert seen == [0, 1, 2]


async def test_a_record_contested_every_time_raises_its_conflict_after_the_tries(
    handles: tuple[SessionStore, SessionStore],
) -> None:
    store, other = handles
    await store.save(AgentSession(id="r", metadata={"theirs": 0}))
    rounds: list[AgentSession] = []

    def change(record: AgentSession) -> bool:
        rounds.append(record)
        record.metadata["mine"] = True
        return True

    contested = Contested(store, other, writes=SAVE_TRIES + 10)
    with pytest.raises(SessionConflictError):
        await change_record(contested, "r", change)
    assert len(rounds) == SAVE_TRIES
    assert "mine" not in (await store.load("r")).metadata

    rounds.clear()
    with pytest.raises(SessionConflictError):
        await change_record(contested, "r", change, tries=2)
    assert len(rounds) == 2


async def test_a_missing_record_is_made_and_a_refused_change_writes_nothing(
    handles: tuple[SessionStore, SessionStore],
) -> None:
    store, _ = handles

    def refuse(record: AgentSession) -> bool:
        record.metadata["mine"] = True
        return False

    await change_record(store, "new", refuse)
    with pytest.raises(SessionNotFoundError):
        await store.load("new")

    def put(record: AgentSession) -> bool:
        record.metadata["mine"] = True
        return True

    await change_record(store, "new", put)
    assert (await store.load("new")).metadata == {"mine": True}


async def test_no_tries_is_refused() -> None:
    def put(record: AgentSession) -> bool:
        return True

    with pytest.raises(ValueError, match="at least one try, not 0"):
        await change_record(InMemorySessionStore(), "r", put, tries=0)
