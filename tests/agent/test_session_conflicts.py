"""Sessions under concurrency: stale saves refused, appends re-applied, nothing lost."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from raf import (
    AgentSession,
    ChatMessage,
    JsonDirectorySessionStore,
    RafError,
    SessionConflictError,
    SessionError,
    SqliteSessionStore,
)
from raf.agent.session_conflicts import reapply_turn


def test_conflict_is_a_public_session_error() -> None:
    assert issubclass(SessionConflictError, SessionError)
    assert issubclass(SessionConflictError, RafError)


async def test_sqlite_rows_written_before_revisions_load_and_save(tmp_path: Path) -> None:
    path = tmp_path / "old.db"
    with sqlite3.connect(path) as conn:
        conn.execute(
            "CREATE TABLE raf_sessions (id TEXT PRIMARY KEY, data TEXT NOT NULL, "
            "updated_at REAL NOT NULL)"
        )
        data = AgentSession(id="old", messages=[ChatMessage.user("x")]).to_dict()
        del data["revision"]
        conn.execute("INSERT INTO raf_sessions VALUES ('old', ?, 1.0)", (json.dumps(data),))
    conn.close()
    store = SqliteSessionStore(path)
    session = await store.load("old")
    assert session.revision == ""
    session.messages.append(ChatMessage.user("y"))
    await store.save(session)
    assert len((await store.load("old")).messages) == 2


async def test_json_files_written_before_revisions_load_and_save(tmp_path: Path) -> None:
    data = AgentSession(id="old").to_dict()
    del data["revision"]
    (tmp_path / "old.json").write_text(json.dumps(data))
    store = JsonDirectorySessionStore(tmp_path)
    session = await store.load("old")
    await store.save(session)
    with pytest.raises(SessionConflictError):
        await store.save(AgentSession(id="old"))


def _session(messages: list[str], state: dict[str, object]) -> AgentSession:
    session = AgentSession(id="s", messages=[ChatMessage.user(t) for t in messages])
    session.provider_state = dict(state)
    return session


def test_re_applying_refuses_what_both_sides_changed() -> None:
    base = _session(["a"], {"k": 1, "other": 0})
    ours = _session(["a", "mine"], {"k": 2, "other": 0})
    ours.mark_stored("1.x", base.to_json())
    fresh = _session(["a", "theirs"], {"k": 3, "other": 0})
    assert reapply_turn(ours, fresh) is None  # state key "k" changed on both sides

    fresh = _session(["a", "theirs"], {"k": 1, "other": 5})
    merged = reapply_turn(ours, fresh)
    assert merged is not None
    assert [m.text for m in merged.messages] == ["a", "theirs", "mine"]
    assert merged.provider_state == {"k": 2, "other": 5}

    rewritten = _session(["summary", "mine"], {"k": 1, "other": 0})
    rewritten.mark_stored("1.x", base.to_json())
    assert reapply_turn(rewritten, fresh) is None  # a compacted history cannot be merged


KILLED_WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from raf import AgentSession, ChatMessage, JsonDirectorySessionStore

    async def main() -> None:
        store = JsonDirectorySessionStore(sys.argv[1])
        round_ = sys.argv[2]
        big = "x" * 2_000_000
        print("ready", flush=True)
        n = 0
        while True:
            session = AgentSession(id=f"r{round_}-{n}", messages=[ChatMessage.user(big)])
            await store.save(session)
            n += 1

    asyncio.run(main())
    """
)


def test_kill_9_during_saves_leaves_no_temp_files_and_list_stays_right(tmp_path: Path) -> None:
    import asyncio
    import random

    where = tmp_path / "sessions"
    rng = random.Random(12)
    interrupted = 0  # writes cut short by a kill (each writer sweeps its elders' leftovers)
    for round_ in range(12):
        proc = subprocess.Popen(
            [sys.executable, "-c", KILLED_WRITER, str(where), str(round_)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == b"ready"
        time.sleep(rng.uniform(0.05, 0.25))
        # then kill as soon as a write is under way (serialising 2 MB leaves no temp file
        # for a while, so a blind kill on a loaded machine can miss every write)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not any(
            p.name.endswith(".tmp") for p in where.iterdir()
        ):
            time.sleep(0.001)
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        interrupted += len([p for p in where.iterdir() if p.name.endswith(".tmp")])
    assert interrupted, "no kill landed mid-write; the test proves nothing"

    store = JsonDirectorySessionStore(where)
    ids = asyncio.run(store.list())
    assert not [p for p in where.iterdir() if p.name.endswith(".tmp")]
    on_disk = {p.stem for p in where.glob("*.json")}
    assert set(ids) == on_disk and len(ids) == len(on_disk)

    async def check_whole() -> None:
        for session_id in ids:  # every acknowledged save is whole
            assert len((await store.load(session_id)).messages[0].text) == 2_000_000

    # one event loop for all: Python 3.11's asyncio.run formats the repr of its task's
    # result (here a 2 MB session) when it restores the SIGINT handler, ~50 ms a call
    asyncio.run(check_whole())
