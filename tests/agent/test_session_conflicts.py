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
    AgentBuilder,
    AgentRunOptions,
    AgentSession,
    ChatMessage,
    InMemorySessionStore,
    JsonDirectorySessionStore,
    RafError,
    SessionConflictError,
    SessionError,
    SessionStore,
    SqliteSessionStore,
)
from raf.agent.session_conflicts import reapply_turn
from raf.testing import ScriptedChatClient

KINDS = ["memory", "json", "sqlite"]


def _store(tmp_path: Path, kind: str) -> SessionStore:
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "json":
        return JsonDirectorySessionStore(tmp_path / "json")
    return SqliteSessionStore(tmp_path / "s.db")


def _twin(tmp_path: Path, kind: str, store: SessionStore) -> SessionStore:
    """A second handle on the same stored data (another process would hold one)."""
    return store if kind == "memory" else _store(tmp_path, kind)


def test_conflict_is_a_public_session_error() -> None:
    assert issubclass(SessionConflictError, SessionError)
    assert issubclass(SessionConflictError, RafError)


@pytest.mark.parametrize("kind", KINDS)
async def test_a_stale_save_is_refused_and_overwrites_nothing(tmp_path: Path, kind: str) -> None:
    store = _store(tmp_path, kind)
    await store.save(AgentSession(id="s", messages=[ChatMessage.user("first")]))
    mine = await store.load("s")
    theirs = await _twin(tmp_path, kind, store).load("s")
    theirs.messages.append(ChatMessage.user("theirs"))
    await _twin(tmp_path, kind, store).save(theirs)
    mine.messages.append(ChatMessage.user("mine"))
    with pytest.raises(SessionConflictError, match="'s'.*saved elsewhere") as caught:
        await store.save(mine)
    assert caught.value.stored_revision == theirs.revision
    assert [m.text for m in (await store.load("s")).messages] == ["first", "theirs"]


@pytest.mark.parametrize("kind", KINDS)
async def test_a_new_session_never_replaces_a_stored_one(tmp_path: Path, kind: str) -> None:
    store = _store(tmp_path, kind)
    await store.save(AgentSession(id="s", messages=[ChatMessage.user("kept")]))
    with pytest.raises(SessionConflictError, match="created elsewhere"):
        await store.save(AgentSession(id="s"))
    assert (await store.load("s")).messages[0].text == "kept"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_deleted_session_is_not_brought_back(tmp_path: Path, kind: str) -> None:
    store = _store(tmp_path, kind)
    await store.save(AgentSession(id="gone"))
    held = await store.load("gone")
    assert await _twin(tmp_path, kind, store).delete("gone") is True
    held.messages.append(ChatMessage.user("late"))
    with pytest.raises(SessionConflictError, match="deleted") as caught:
        await store.save(held)
    assert caught.value.stored_revision is None
    assert "gone" not in await store.list()


@pytest.mark.parametrize("kind", KINDS)
async def test_saving_the_same_copy_again_works(tmp_path: Path, kind: str) -> None:
    store = _store(tmp_path, kind)
    session = AgentSession(id="s")
    for n in range(3):
        session.messages.append(ChatMessage.user(str(n)))
        await store.save(session)
    assert session.revision is not None and session.revision.startswith("3.")
    assert len((await store.load("s")).messages) == 3


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


async def test_a_turn_is_re_applied_when_another_turn_was_saved_meanwhile(
    tmp_path: Path,
) -> None:
    store = JsonDirectorySessionStore(tmp_path)
    agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(["a", "b", "c", "d"]))
        .with_session_store(store)
        .build()
    )
    await agent.run("one", session=agent.create_session("s"))
    mine = await store.load("s")
    theirs = await JsonDirectorySessionStore(tmp_path).load("s")
    await agent.run("two", session=theirs)
    with pytest.raises(SessionConflictError, match="saved elsewhere"):
        await agent.run("refused", session=mine.snapshot())  # no retries: refused
    await agent.run("three", session=mine, options=AgentRunOptions(conflict_retries=1))
    texts = [m.text for m in (await store.load("s")).messages]
    assert texts == ["one", "a", "two", "b", "three", "d"]
    assert [m.text for m in mine.messages] == texts  # the caller's copy is the stored one


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


CONCURRENT_TURNS = textwrap.dedent(
    """
    import asyncio, sys
    from raf import AgentBuilder, AgentRunOptions
    from raf import JsonDirectorySessionStore, SessionNotFoundError, SqliteSessionStore
    from raf.testing import ScriptedChatClient

    async def main() -> None:
        kind, where, worker, turns = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        store = SqliteSessionStore(where) if kind == "sqlite" else JsonDirectorySessionStore(where)
        agent = (
            AgentBuilder()
            .with_chat_client(ScriptedChatClient([f"{worker} reply {n}" for n in range(turns)]))
            .with_session_store(store)
            .build()
        )
        options = AgentRunOptions(conflict_retries=1000)
        for n in range(turns):
            try:
                session = await store.load("shared")
            except SessionNotFoundError:
                session = agent.create_session("shared")
            await agent.run(f"{worker} asks {n}", session=session, options=options)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("kind", ["json", "sqlite"])
def test_processes_appending_to_one_session_lose_no_turn(tmp_path: Path, kind: str) -> None:
    where = str(tmp_path / ("s.db" if kind == "sqlite" else "dir"))
    workers, turns = 4, 25
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", CONCURRENT_TURNS, kind, where, f"w{n}", str(turns)],
            stderr=subprocess.PIPE,
        )
        for n in range(workers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()[-3000:]
    store: SessionStore = (
        SqliteSessionStore(where) if kind == "sqlite" else JsonDirectorySessionStore(where)
    )
    import asyncio

    texts = [m.text for m in asyncio.run(store.load("shared")).messages]
    expected = {f"w{w} asks {n}" for w in range(workers) for n in range(turns)}
    asked = [t for t in texts if " asks " in t]
    assert len(texts) == 2 * workers * turns, f"{len(texts)} of {2 * workers * turns} kept"
    assert sorted(asked) == sorted(expected)
    for worker in range(workers):  # each worker's turns in its own order, reply after ask
        own = [t for t in texts if t.startswith(f"w{worker} ")]
        assert own == [
            t for n in range(turns) for t in (f"w{worker} asks {n}", f"w{worker} reply {n}")
        ]


RESUMER = textwrap.dedent(
    """
    import asyncio, sys
    from raf import AgentBuilder, SessionConflictError
    from raf import SqliteSessionStore
    from raf.testing import ScriptedChatClient

    async def main() -> None:
        store = SqliteSessionStore(sys.argv[1])
        agent = (
            AgentBuilder()
            .with_chat_client(ScriptedChatClient(["late reply"]))
            .with_session_store(store)
            .build()
        )
        session = await store.load("doomed")
        print("loaded", flush=True)
        sys.stdin.readline()  # another process deletes the session now
        try:
            await agent.run("still there?", session=session)
        except SessionConflictError as exc:
            print("conflict:", exc, flush=True)
            return
        print("saved", flush=True)

    asyncio.run(main())
    """
)


def test_a_process_holding_a_deleted_session_does_not_resurrect_it(tmp_path: Path) -> None:
    import asyncio

    where = tmp_path / "s.db"
    asyncio.run(SqliteSessionStore(where).save(AgentSession(id="doomed")))
    proc = subprocess.Popen(
        [sys.executable, "-c", RESUMER, str(where)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline().strip() == "loaded"
    deleter = "import asyncio, sys; from raf import SqliteSessionStore; "
    deleter += "print(asyncio.run(SqliteSessionStore(sys.argv[1]).delete('doomed')))"
    done = subprocess.run(
        [sys.executable, "-c", deleter, str(where)], capture_output=True, text=True, timeout=60
    )
    assert done.stdout.strip() == "True", done.stderr
    out, err = proc.communicate("go\n", timeout=60)
    assert proc.returncode == 0, err
    assert out.startswith("conflict:") and "deleted" in out
    assert asyncio.run(SqliteSessionStore(where).list()) == []


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
        os.kill(proc.pid, signal.SIGKILL)
        proc.communicate(timeout=30)
        interrupted += len([p for p in where.iterdir() if p.name.endswith(".tmp")])
    assert interrupted, "no kill landed mid-write; the test proves nothing"

    store = JsonDirectorySessionStore(where)
    ids = asyncio.run(store.list())
    assert not [p for p in where.iterdir() if p.name.endswith(".tmp")]
    on_disk = {p.stem for p in where.glob("*.json")}
    assert set(ids) == on_disk and len(ids) == len(on_disk)
    for session_id in ids:  # every acknowledged save is whole
        assert len(asyncio.run(store.load(session_id)).messages[0].text) == 2_000_000
