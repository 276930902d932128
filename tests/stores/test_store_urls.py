"""One string names a session store: URLs, files, folders, memory; unknown schemes refused."""

from __future__ import annotations

from pathlib import Path

import pytest

from raf import (
    InMemorySessionStore,
    JsonDirectorySessionStore,
    PostgresSessionStore,
    RedisSessionStore,
    SessionError,
    SqliteSessionStore,
)
from raf.stores.urls import open_session_store


def test_each_kind_of_name_opens_its_store(tmp_path: Path) -> None:
    pg = open_session_store("postgresql://raf:secret@db.internal:5433/app")
    assert isinstance(pg, PostgresSessionStore)
    assert pg.where == "PostgreSQL session store at postgresql://raf@db.internal:5433/app " + (
        "(table raf_sessions)"
    )
    assert isinstance(open_session_store("redis://127.0.0.1:6379/2"), RedisSessionStore)
    sqlite = open_session_store(f"sqlite://{tmp_path}/s.sqlite")
    assert isinstance(sqlite, SqliteSessionStore) and sqlite.path == tmp_path / "s.sqlite"
    assert isinstance(open_session_store(str(tmp_path / "x.db")), SqliteSessionStore)
    assert isinstance(open_session_store(str(tmp_path / "folder")), JsonDirectorySessionStore)
    assert isinstance(open_session_store("memory:"), InMemorySessionStore)


def test_an_unknown_scheme_is_refused_not_taken_for_a_folder() -> None:
    with pytest.raises(SessionError, match="unknown session store mysql://"):
        open_session_store("mysql://u:p@h/db")
    with pytest.raises(SessionError, match="empty"):
        open_session_store("  ")
