"""Store files that hold a user's data are created readable by their owner only (0600,
folders 0700), whatever the umask allows; an existing file keeps its mode."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from raf import AgentSession, ChatMessage, JsonDirectorySessionStore, SqliteSessionStore
from raf.context.knowledge import KnowledgeIndex
from raf.core.private_files import atomic_write_text, private_dir, private_file
from raf.stores.checkpoints import Checkpoint
from raf.workflow import JsonFileCheckpointStore, SqliteCheckpointStore


@pytest.fixture(autouse=True)
def open_umask() -> Iterator[None]:
    """The common default: without raf's care, new files would be 0644, folders 0755."""
    old = os.umask(0o022)
    try:
        yield
    finally:
        os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def session() -> AgentSession:
    s = AgentSession(id="s1")
    s.messages.append(ChatMessage.user("my secret plans"))
    return s


def checkpoint() -> Checkpoint:
    return Checkpoint(id="cp1", run_id="r1", workflow="w", fingerprint="f", superstep=0)


async def test_session_stores_are_private(tmp_path: Path) -> None:
    sqlite = SqliteSessionStore(tmp_path / "state" / "sessions.sqlite")
    await sqlite.save(session())
    assert mode(tmp_path / "state") == 0o700
    assert mode(tmp_path / "state" / "sessions.sqlite") == 0o600
    folder = tmp_path / "json" / "sessions"
    await JsonDirectorySessionStore(folder).save(session())
    assert mode(tmp_path / "json") == 0o700 and mode(folder) == 0o700
    assert [mode(p) for p in folder.glob("*.json")] == [0o600]


async def test_checkpoint_stores_are_private(tmp_path: Path) -> None:
    await SqliteCheckpointStore(tmp_path / "cp" / "checkpoints.sqlite").save(checkpoint())
    assert mode(tmp_path / "cp") == 0o700
    assert mode(tmp_path / "cp" / "checkpoints.sqlite") == 0o600
    json_store = JsonFileCheckpointStore(tmp_path / "cps")
    await json_store.save(checkpoint())
    await json_store.claim("cp1", ["r"], "me")
    assert mode(tmp_path / "cps") == 0o700 and mode(tmp_path / "cps" / "cp1.json") == 0o600
    claims = [p for p in (tmp_path / "cps" / ".claims").rglob("*") if p.is_file()]
    assert claims and all(mode(p) == 0o600 for p in claims)


def test_the_knowledge_index_is_private(tmp_path: Path) -> None:
    index = KnowledgeIndex(tmp_path / "kb" / "index.db")
    index.close()
    assert mode(tmp_path / "kb") == 0o700 and mode(tmp_path / "kb" / "index.db") == 0o600


def test_an_existing_file_or_folder_keeps_its_mode(tmp_path: Path) -> None:
    shared = tmp_path / "shared.sqlite"
    shared.write_text("")
    shared.chmod(0o640)
    private_file(shared)
    assert mode(shared) == 0o640
    tmp_path.chmod(0o755)
    private_dir(tmp_path)
    assert mode(tmp_path) == 0o755  # not made by raf: untouched
    assert mode(private_dir(tmp_path / "a" / "b")) == 0o700 and mode(tmp_path / "a") == 0o700


def test_a_rewritten_file_keeps_its_mode_when_asked(tmp_path: Path) -> None:
    shared = tmp_path / "cases.yaml"
    shared.write_text("old")
    shared.chmod(0o644)
    atomic_write_text(shared, "new", keep_mode=True)
    assert shared.read_text() == "new" and mode(shared) == 0o644
    fresh = tmp_path / "new" / "cases.yaml"
    atomic_write_text(fresh, "first", keep_mode=True)
    assert mode(fresh) == 0o600 and mode(fresh.parent) == 0o700
    atomic_write_text(shared, "private again")
    assert mode(shared) == 0o600  # without keep_mode a rewrite is private
