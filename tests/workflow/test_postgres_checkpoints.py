"""The PostgreSQL checkpoint store's own behaviour: errors that name it, and the order it
lists checkpoints in (the other stores' order, tested for all in test_checkpoints.py)."""

from __future__ import annotations

import uuid

import pytest

from raf.workflow import Checkpoint, CheckpointError, PostgresCheckpointStore
from tests.servers import PG_PASSWORD, Server, free_port


def _checkpoint(checkpoint_id: str, run_id: str, superstep: int) -> Checkpoint:
    return Checkpoint(
        id=checkpoint_id,
        run_id=run_id,
        workflow="w",
        fingerprint="f",
        superstep=superstep,
        created_at=1.0,  # equal times: the order must come from the writes
    )


async def test_an_unreachable_server_is_named_without_the_password() -> None:
    port = free_port()
    store = PostgresCheckpointStore(f"postgresql://raf:{PG_PASSWORD}@127.0.0.1:{port}/raf")
    with pytest.raises(CheckpointError) as caught:
        await store.save(_checkpoint("c", "r", 0))
    text = str(caught.value)
    assert f"PostgreSQL checkpoint store at postgresql://raf@127.0.0.1:{port}/raf" in text
    assert PG_PASSWORD not in text


async def test_checkpoints_are_listed_newest_write_first(postgres_server: Server) -> None:
    store = PostgresCheckpointStore(postgres_server.url, table=f"cp_{uuid.uuid4().hex[:12]}")
    for n in range(3):
        await store.save(_checkpoint(f"a{n}", "run-a", n))
    await store.save(_checkpoint("b0", "run-b", 0))
    await store.save(_checkpoint("a0", "run-a", 0))  # written again: now the newest
    assert [i.id for i in await store.list()] == ["a0", "b0", "a2", "a1"]
    assert [i.id for i in await store.list("run-a")] == ["a0", "a2", "a1"]
    assert (await store.load("a2")).superstep == 2
    assert await store.delete("a2") is True
    assert await store.delete("a2") is False
    await store.close()
