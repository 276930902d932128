"""The knowledge index's SQLite file: its schema, how it is opened, and how a damaged
file is recognised and set aside."""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sqlite3

from raf.core.errors import RafError

log = logging.getLogger("raf.context.knowledge")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
  source TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, sha256 TEXT, origin TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY, source TEXT NOT NULL, ordinal INTEGER, heading TEXT, text TEXT
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
  text, heading, tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS vectors (chunk_id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
"""


def _is_damage(exc: BaseException) -> bool:
    """A database error that means the file is damaged (sqlite3's or pysqlite3's)."""
    if type(exc).__name__ not in ("DatabaseError", "OperationalError"):
        return False
    text = str(exc).lower()
    return any(sign in text for sign in _DAMAGE_SIGNS)


_DAMAGE_SIGNS = (
    "not a database",
    "malformed",
    "vtable constructor failed",
    "corrupt",
    "file is encrypted",
)
_BUSY_TIMEOUT_S = 120.0


class KnowledgeIndexDamagedError(RafError):
    """The index file was found damaged while in use; it was rebuilt empty."""


def _load_sqlite_vec(db: sqlite3.Connection, error: type[Exception]) -> bool:
    """Load sqlite-vec into `db`; False when the module or extension loading is missing.

    `error` is the driver's base error class (sqlite3.Error or pysqlite3's own)."""
    if not hasattr(db, "enable_load_extension"):
        return False
    try:
        sqlite_vec = importlib.import_module("sqlite_vec")
        db.enable_load_extension(True)
        sqlite_vec.load(db)
        db.enable_load_extension(False)
    except (ImportError, AttributeError, error):
        return False
    return True


def _connect(path: str, *, vectors: bool) -> tuple[sqlite3.Connection, bool]:
    """Open the index database, with sqlite-vec when vectors are wanted and it can load.

    Many Pythons (this one's included) build `sqlite3` without extension loading; then
    the `pysqlite3-binary` wheel, which bundles its own SQLite, opens the file instead.
    Without either, vectors are compared in pure Python (same results, slower).
    """
    db = sqlite3.connect(path, check_same_thread=False)
    if not vectors or _load_sqlite_vec(db, sqlite3.Error):
        return db, vectors
    try:
        pysqlite3 = importlib.import_module("pysqlite3.dbapi2")
    except ImportError:
        return db, False
    other: sqlite3.Connection = pysqlite3.connect(path, check_same_thread=False)
    if not _load_sqlite_vec(other, pysqlite3.Error):
        other.close()
        return db, False
    db.close()
    return other, True


def connect_checked(path: str, *, vectors: bool) -> tuple[sqlite3.Connection, bool]:
    """Open the index file and create its tables; any failure closes it again."""
    db, vec_sql = _connect(path, vectors=vectors)
    try:
        db.isolation_level = None  # transactions are explicit: BEGIN IMMEDIATE
        db.execute(f"PRAGMA busy_timeout = {int(_BUSY_TIMEOUT_S * 1000)}")
        db.executescript(_SCHEMA)
        db.execute("SELECT count(*) FROM files").fetchone()
        if path != ":memory:":
            check_intact(db)
    except BaseException:
        db.close()
        raise
    return db, vec_sql


def check_intact(db: sqlite3.Connection) -> None:
    """Raise a damage error when SQLite's own check finds the file damaged: a damaged
    page may hold rows no query reads for a long time, so searches would answer from
    what is left without a word."""
    row = db.execute("PRAGMA quick_check(1)").fetchone()
    verdict = "no answer" if row is None else str(row[0])
    if verdict != "ok":
        raise sqlite3.DatabaseError(f"database disk image is malformed: {verdict}")


def set_aside(path: str, exc: BaseException) -> None:
    """Move a damaged file to `<path>.damaged` (replacing an older one) and warn."""
    log.warning(
        "knowledge index %s is damaged (%s); it was moved to %s.damaged and rebuilt "
        "empty: sync it again to index the sources",
        path,
        exc,
        path,
    )
    os.replace(path, f"{path}.damaged")
    for suffix in ("-wal", "-shm", "-journal"):
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path + suffix)
