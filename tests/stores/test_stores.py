"""Session stores: the four methods, atomic writes, damaged data, concurrent processes."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raf import (
    AgentSession,
    ChatMessage,
    JsonDirectorySessionStore,
    SessionError,
    SessionFormatError,
    SessionStore,
    SqliteSessionStore,
)


async def test_json_store_refuses_path_tricks_in_ids(tmp_path: Path) -> None:
    store = JsonDirectorySessionStore(tmp_path)
    with pytest.raises(SessionError, match="not valid"):
        await store.load("../etc/passwd")


async def test_truncated_file_is_a_clear_error_and_other_sessions_survive(tmp_path: Path) -> None:
    store = JsonDirectorySessionStore(tmp_path)
    await store.save(AgentSession(id="good", messages=[ChatMessage.user("keep me")]))
    await store.save(AgentSession(id="bad", messages=[ChatMessage.user("x" * 100)]))
    path = tmp_path / "bad.json"
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(SessionFormatError, match=r"bad\.json is not valid JSON"):
        await store.load("bad")
    assert (await store.load("good")).messages[0].text == "keep me"


async def test_newer_format_in_sqlite_is_refused(tmp_path: Path) -> None:
    import json
    import sqlite3

    store = SqliteSessionStore(tmp_path / "s.db")
    await store.save(AgentSession(id="s"))
    data = AgentSession(id="s").to_dict()
    data["format"] = 7
    with sqlite3.connect(tmp_path / "s.db") as conn:
        conn.execute("UPDATE raf_sessions SET data = ? WHERE id = 's'", (json.dumps(data),))
    with pytest.raises(SessionFormatError, match="format 7"):
        await store.load("s")


WRITER = textwrap.dedent(
    """
    import asyncio, sys
    from raf import AgentSession, ChatMessage, JsonDirectorySessionStore, SqliteSessionStore
    from raf import SessionConflictError

    async def main() -> None:
        kind, where, worker = sys.argv[1], sys.argv[2], sys.argv[3]
        store = SqliteSessionStore(where) if kind == "sqlite" else JsonDirectorySessionStore(where)
        for i in range(40):
            session = AgentSession(id=f"shared", messages=[ChatMessage.user(f"{worker}-{i}" * 200)])
            try:
                session.revision = (await store.load("shared")).revision
            except Exception:
                pass
            try:
                await store.save(session)
            except SessionConflictError:
                pass
            await store.save(AgentSession(id=f"{worker}-{i}"))
            loaded = await store.load("shared")
            assert loaded.messages[0].text.endswith("-" + loaded.messages[0].text.split("-")[-1])

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("kind", ["sqlite", "json"])
async def test_two_processes_writing_at_once_corrupt_nothing(tmp_path: Path, kind: str) -> None:
    where = str(tmp_path / ("s.db" if kind == "sqlite" else "dir"))
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, kind, where, f"w{n}"], stderr=subprocess.PIPE
        )
        for n in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err.decode()
    store: SessionStore = (
        SqliteSessionStore(where) if kind == "sqlite" else JsonDirectorySessionStore(where)
    )
    ids = await store.list()
    assert len(ids) == 81
    shared = await store.load("shared")
    text = shared.messages[0].text
    assert text == text[: len(text) // 200] * 200  # one writer's whole value, never a mix
    if kind == "json":
        assert not [p for p in Path(where).iterdir() if p.name.endswith(".tmp")]
