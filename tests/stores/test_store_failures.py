"""A store that fails mid-run: its failures are `SessionStoreError`s, a call waits no
longer than the store timeout, and a lease a run could not give back is given back once
the store answers again, not when it lapses.

The failures are real: a SQLite file whose write lock another connection holds (what a
stuck writer or a backup does to it), and a file that is not a database at all.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from pathlib import Path

import pytest

from raf.core.cancellation import CancellationToken
from raf.core.errors import SessionError, SessionStoreError
from raf.core.sessions import AgentSession
from raf.stores.leases import HeldLease, UnreleasedLeases
from raf.stores.sessions import SqliteSessionStore
from raf.stores.timed import TimedSessionStore

LONG = 120.0
"""The leases' length: a lease left behind would hold its session this long."""


def write_lock(path: Path) -> sqlite3.Connection:
    """Another connection holding the file's write lock until it commits."""
    blocker = sqlite3.connect(path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    return blocker


async def test_a_lease_not_given_back_while_the_store_failed_is_given_back_once_it_answers(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "s.sqlite", timeout=0.2)
    unreleased = UnreleasedLeases(store)
    run = HeldLease(store, "s", "run-1", LONG, CancellationToken(), unreleased)
    assert (await run.take()).holder == "run-1"
    blocker = write_lock(store.path)
    await run.release()  # the store is locked: the lease stays, known to be no one's
    assert len(unreleased) == 1
    assert (await store.read_lease("s")) is not None
    blocker.execute("COMMIT")
    blocker.close()
    deadline = time.monotonic() + 10
    # given back in the store, then forgotten: the retry notes it once the store's
    # answer reaches it, an instant after a reader may already see the lease gone
    while (await store.read_lease("s")) is not None or len(unreleased):
        assert time.monotonic() < deadline, "the lease was not given back and forgotten"
        await asyncio.sleep(0.05)
    # another process's run takes the session at once, not in 120 s
    other = HeldLease(store, "s", "run-2", LONG, CancellationToken())
    assert (await other.take()).holder == "run-2"
    await other.release()


async def test_a_run_of_the_same_process_takes_over_a_lease_it_knows_is_no_ones(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "s.sqlite", timeout=0.2)
    unreleased = UnreleasedLeases(store)
    old = HeldLease(store, "s", "run-1", LONG, CancellationToken())
    assert (await old.take()).holder == "run-1"
    unreleased.add("s", "run-1", time.monotonic() + LONG)  # as a failed release leaves it
    new = HeldLease(store, "s", "run-2", LONG, CancellationToken(), unreleased)
    assert (await new.take()).holder == "run-2"  # before any retry in the background
    assert not unreleased.holds("s", "run-1")
    await new.release()
    await old.release()


async def test_a_lease_the_store_failed_to_take_is_given_back_in_case_it_took_it(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "s.sqlite", timeout=0.2)
    await store.list()  # the file exists before it is locked
    unreleased = UnreleasedLeases(store)
    blocker = write_lock(store.path)
    run = HeldLease(store, "s", "run-1", LONG, CancellationToken(), unreleased)
    with pytest.raises(SessionStoreError, match="locked"):
        await run.take()
    assert unreleased.holds("s", "run-1")
    blocker.execute("ROLLBACK")
    blocker.close()
    deadline = time.monotonic() + 10
    while len(unreleased):
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)


async def test_a_store_call_waits_no_longer_than_the_store_timeout(tmp_path: Path) -> None:
    slow = SqliteSessionStore(tmp_path / "s.sqlite", timeout=30)  # its own wait: 30 s
    await slow.list()
    timed = TimedSessionStore(slow, 0.5)
    blocker = write_lock(slow.path)
    try:
        started = time.monotonic()
        with pytest.raises(SessionStoreError, match="did not answer within 0.5 s"):
            await timed.take_lease("s", "run-1", LONG)
        assert time.monotonic() - started < 10  # not SQLite's 30 s
        with pytest.raises(SessionStoreError):
            await timed.save(AgentSession(id="s"))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    await timed.probe()  # it answers again


async def test_sqlite_failures_are_the_stores_not_the_drivers(tmp_path: Path) -> None:
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"not a database at all " * 400)
    store = SqliteSessionStore(damaged, timeout=0.2)
    with pytest.raises(SessionStoreError, match="not a database"):
        await store.load("s")
    locked = SqliteSessionStore(tmp_path / "s.sqlite", timeout=0.2)
    await locked.save(AgentSession(id="s"))
    blocker = write_lock(locked.path)
    try:
        with pytest.raises(SessionStoreError, match="locked"):
            await locked.save(await locked.load("s"))
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert issubclass(SessionStoreError, SessionError)  # who catches SessionError still does
