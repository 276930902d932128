"""Session leases, the run lock per session: the same contract in every store, one
holder among processes that race for it, and a lease freed after its holder is killed."""

from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from raf.core.cancellation import CancellationToken
from raf.core.sessions import SessionLeases
from raf.stores.leases import HeldLease, LocalLeases, leases_of
from tests.stores.conftest import StoreSpot
from tests.stores.store_kinds import make_store


def _leases(spot: StoreSpot) -> SessionLeases:
    store = spot.open()
    assert isinstance(store, SessionLeases)
    return store


async def test_one_holder_at_a_time_and_only_the_holder_gives_it_back(spot: StoreSpot) -> None:
    leases = _leases(spot)
    assert await leases.read_lease("s1") is None
    mine = await leases.take_lease("s1", "run-a", 30)
    assert (mine.session_id, mine.holder, mine.cancel) == ("s1", "run-a", None)
    assert mine.expires_at > time.time()
    theirs = await leases.take_lease("s1", "run-b", 30)
    assert theirs.holder == "run-a"  # the lease that stands, not b's
    await leases.release_lease("s1", "run-b")  # not b's to give back
    standing = await leases.read_lease("s1")
    assert standing is not None and standing.holder == "run-a"
    other = await leases.take_lease("s2", "run-b", 30)
    assert other.holder == "run-b"  # a lease is per session
    await leases.release_lease("s1", "run-a")
    assert await leases.read_lease("s1") is None
    assert (await leases.take_lease("s1", "run-b", 30)).holder == "run-b"


async def test_a_renewal_keeps_the_cancel_request_and_a_new_holder_starts_without(
    spot: StoreSpot,
) -> None:
    leases = _leases(spot)
    assert await leases.cancel_lease("s1", "stop") is None  # nothing runs there
    await leases.take_lease("s1", "run-a", 30)
    asked = await leases.cancel_lease("s1", "cancelled by the client")
    assert asked is not None and asked.holder == "run-a"
    renewed = await leases.take_lease("s1", "run-a", 30)
    assert (renewed.holder, renewed.cancel) == ("run-a", "cancelled by the client")
    await leases.release_lease("s1", "run-a")
    fresh = await leases.take_lease("s1", "run-b", 30)
    assert (fresh.holder, fresh.cancel) == ("run-b", None)


async def test_a_lease_lapses_unless_renewed(spot: StoreSpot) -> None:
    leases = _leases(spot)
    first = await leases.take_lease("s1", "run-a", 0.3)
    if spot.kind == "memory":  # one process: its holders cannot die apart from it
        assert first.expires_at == math.inf
        await asyncio.sleep(0.4)
        assert (await leases.take_lease("s1", "run-b", 0.3)).holder == "run-a"
        return
    await asyncio.sleep(0.15)
    renewed = await leases.take_lease("s1", "run-a", 0.3)
    assert renewed.expires_at > first.expires_at
    await asyncio.sleep(0.2)  # within the renewed lease
    assert (await leases.take_lease("s1", "run-b", 0.3)).holder == "run-a"
    await asyncio.sleep(0.4)
    assert await leases.read_lease("s1") is None
    taken = await leases.take_lease("s1", "run-b", 30)
    assert taken.holder == "run-b"
    # the one that lapsed is told so when it tries to renew
    assert (await leases.take_lease("s1", "run-a", 30)).holder == "run-b"


async def test_a_held_lease_is_renewed_and_cancels_its_run_when_asked(
    shared_spot: StoreSpot,
) -> None:
    leases = _leases(shared_spot)
    token = CancellationToken()
    held = HeldLease(leases, "s1", "run-a", 0.6, token)
    assert (await held.take()).holder == "run-a"
    await asyncio.sleep(1.0)  # past the first length: only renewals keep it
    standing = await leases.read_lease("s1")
    assert standing is not None and standing.holder == "run-a"
    assert not token.cancelled
    await leases.cancel_lease("s1", "cancelled from another worker")
    await asyncio.sleep(0.5)
    assert token.cancelled and token.reason == "cancelled from another worker"
    await held.release()
    await held.release()  # twice is fine
    assert await leases.read_lease("s1") is None


async def test_a_held_lease_that_another_run_took_stops_its_own_run(tmp_path: Path) -> None:
    store = make_store("sqlite", str(tmp_path / "s.sqlite"), "t")
    leases = leases_of(store)
    token = CancellationToken()
    held = HeldLease(leases, "s1", "run-a", 0.6, token)
    await held.take()
    await leases.release_lease("s1", "run-a")  # as if it lapsed
    await leases.take_lease("s1", "run-b", 30)
    await asyncio.sleep(0.5)
    assert token.cancelled
    assert "run-b took the session" in (token.reason or "")
    await held.release()
    standing = await leases.read_lease("s1")
    assert standing is not None and standing.holder == "run-b"  # b's is not given back


def test_a_store_without_leases_gets_leases_of_this_process(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Plain:
        async def save(self, session: object) -> None:
            return None

        async def load(self, session_id: str) -> object:
            return None

        async def delete(self, session_id: str) -> bool:
            return False

        async def list(self) -> list[str]:
            return []

    with caplog.at_level("WARNING", logger="raf.sessions"):
        found = leases_of(Plain())  # type: ignore[arg-type]
    assert isinstance(found, LocalLeases)
    assert "keeps no leases" in caplog.text and "Plain" in caplog.text


RACER = textwrap.dedent(
    """
    import asyncio, json, os, sys, time
    sys.path.insert(0, sys.argv[5])
    from tests.stores.store_kinds import make_store

    async def main() -> None:
        kind, where, name, folder = sys.argv[1:5]
        store = make_store(kind, where, name)
        await store.take_lease("warm-up", f"w-{os.getpid()}", 1)  # connect, create tables
        open(os.path.join(folder, f"ready-{os.getpid()}"), "w").close()
        while len([n for n in os.listdir(folder) if n.startswith("ready-")]) < int(sys.argv[6]):
            time.sleep(0.005)
        lease = await store.take_lease("contested", f"run-{os.getpid()}", 30)
        print(json.dumps({"me": f"run-{os.getpid()}", "holder": lease.holder}), flush=True)
        if sys.argv[7] == "hold":
            print("holding", flush=True)
            await asyncio.sleep(600)

    asyncio.run(main())
    """
)


def _racer(
    kind: str, where: str, name: str, folder: Path, count: int, hold: bool
) -> subprocess.Popen[str]:
    root = str(Path(__file__).resolve().parents[2])
    mode = "hold" if hold else "go"
    return subprocess.Popen(
        [sys.executable, "-c", RACER, kind, where, name, str(folder), root, str(count), mode],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_processes_racing_for_one_lease_get_one_holder(
    shared_spot: StoreSpot, tmp_path: Path
) -> None:
    spot = shared_spot
    folder = tmp_path / "race"
    folder.mkdir()
    racers = [_racer(spot.kind, spot.where, spot.name, folder, 4, False) for _ in range(4)]
    try:
        lines = [json.loads(p.communicate(timeout=60)[0].strip()) for p in racers]
    finally:
        for process in racers:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)
    holders = {line["holder"] for line in lines}
    assert len(holders) == 1, lines
    assert sum(line["me"] == line["holder"] for line in lines) == 1


async def test_a_killed_holder_frees_the_session_after_its_lease(
    shared_spot: StoreSpot, tmp_path: Path
) -> None:
    spot = shared_spot
    folder = tmp_path / "kill"
    folder.mkdir()
    holder = _racer(spot.kind, spot.where, spot.name, folder, 1, True)
    try:
        assert holder.stdout is not None
        line = json.loads(holder.stdout.readline())
        assert line["holder"] == line["me"]
        assert holder.stdout.readline().strip() == "holding"
        leases = spot.open()
        assert isinstance(leases, SessionLeases)
        # the racer took a 30 s lease: shorten the wait by renewing it as the racer
        # would, for 1 s, just before killing it
        await leases.take_lease("contested", line["me"], 1.0)
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=10)
        assert (await leases.take_lease("contested", "run-next", 30)).holder == line["me"]
        await asyncio.sleep(1.2)
        assert (await leases.take_lease("contested", "run-next", 30)).holder == "run-next"
    finally:
        if holder.poll() is None:
            holder.kill()
            holder.wait(timeout=10)
