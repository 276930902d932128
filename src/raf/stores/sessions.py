"""Session stores: in memory, one JSON file per session, and SQLite. Writes are atomic."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import json
import logging
import os
import re
import sqlite3
import stat
import time
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import TypeVar

from raf.core.errors import (
    SessionConflictError,
    SessionError,
    SessionNotFoundError,
    SessionStoreError,
)
from raf.core.private_files import atomic_write_text, private_dir
from raf.core.sessions import AgentSession, SessionLease, next_revision
from raf.stores.leases import LocalLeases, lease_after, standing
from raf.stores.runs import LocalRuns
from raf.stores.sqlite_file import PerThread, open_wal
from raf.stores.sqlite_runs import RUN_TABLES, SqliteRuns

log = logging.getLogger("raf.sessions")

T = TypeVar("T")

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def _check_id(session_id: str) -> str:
    if not _SAFE_ID.match(session_id) or session_id in (".", ".."):
        raise SessionError(
            f"session id {session_id!r} is not valid: use 1-128 letters, digits, '_', '-', '.'"
        )
    return session_id


class InMemorySessionStore(LocalLeases, LocalRuns):
    """Keeps sessions in this process (as JSON, so nothing is shared by reference), their
    leases (`LocalLeases`) and their runs (`LocalRuns`)."""

    def __init__(self) -> None:
        LocalLeases.__init__(self)
        LocalRuns.__init__(self)
        self._data: dict[str, tuple[float, str, str]] = {}

    async def save(self, session: AgentSession) -> None:
        held = self._data.get(session.id)
        stored = None if held is None else held[2]
        if stored != session.revision:
            raise SessionConflictError(
                session.id, expected=session.revision, stored=stored, where="memory"
            )
        revision = next_revision(session.revision)
        text = session.to_json(revision=revision)
        self._data[session.id] = (session.updated_at, text, revision)
        session.mark_stored(revision, text)

    async def load(self, session_id: str) -> AgentSession:
        try:
            _, text, revision = self._data[session_id]
        except KeyError:
            raise SessionNotFoundError(f"no session {session_id!r} in memory") from None
        session = AgentSession.from_json(text, source=f"session {session_id!r}")
        session.mark_stored(revision, text)
        return session

    async def delete(self, session_id: str) -> bool:
        return self._data.pop(session_id, None) is not None

    async def list(self) -> list[str]:
        return [k for k, _ in sorted(self._data.items(), key=lambda kv: -kv[1][0])]


@contextlib.contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    """An exclusive advisory lock across processes (a no-op where fcntl is missing)."""
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path, "a+b") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


MAX_SESSION_BYTES = 256 * 1024 * 1024
"""Largest session file read."""


def read_plain_file(path: Path, max_bytes: int = MAX_SESSION_BYTES) -> bytes:
    """The bytes of `path` when its last component is a regular, singly-linked file: a
    symlink, FIFO or hard link planted under a session's name is refused, not followed."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SessionError(
                f"{path} is a symbolic link; session files are never followed"
            ) from None
        raise
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_nlink > 1:
            raise SessionError(f"{path} is not a plain file (special file or hard link)")
        if st.st_size > max_bytes:
            raise SessionError(f"{path} is larger than {max_bytes} bytes")
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(max_bytes + 1)
    finally:
        os.close(fd)


def remove_orphaned_temp_files(directory: Path) -> int:
    """Delete the temporary files `atomic_write_text` left in `directory` when a process
    died mid-write; call it only while holding the lock every writer there holds."""
    removed = 0
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return 0
    for name in names:
        if name.startswith(".") and name.endswith(".tmp"):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(directory / name)
                removed += 1
    if removed:
        log.warning(
            "removed %d temporary file(s) left by an interrupted write in %s", removed, directory
        )
    return removed


def _stored_revision(path: Path) -> str | None:
    """The revision of the session stored at `path` ('' for one written before
    revisions existed); None when nothing is stored there."""
    try:
        data = read_plain_file(path)
    except FileNotFoundError:
        return None
    session = AgentSession.from_json(data, source=str(path))
    return session.revision or ""


class JsonDirectorySessionStore:
    """One `<id>.json` file per session in a directory; safe across processes."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)
        self._swept = False

    def _path(self, session_id: str) -> Path:
        return self.directory / f"{_check_id(session_id)}.json"

    def _lock_path(self) -> Path:
        private_dir(self.directory)
        return self.directory / ".lock"

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """The directory's lock; the first time, leftovers of killed writers are swept."""
        with _file_lock(self._lock_path()):
            if not self._swept:
                remove_orphaned_temp_files(self.directory)
                self._swept = True
            yield

    async def save(self, session: AgentSession) -> None:
        path = self._path(session.id)
        expected = session.revision
        revision = next_revision(expected)
        text = session.to_json(revision=revision)

        def write() -> None:
            with self._locked():
                stored = _stored_revision(path)
                if stored != expected:
                    raise SessionConflictError(
                        session.id, expected=expected, stored=stored, where=str(self.directory)
                    )
                atomic_write_text(path, text)

        await asyncio.to_thread(write)
        session.mark_stored(revision, text)

    async def load(self, session_id: str) -> AgentSession:
        path = self._path(session_id)

        def read() -> bytes:
            try:
                return read_plain_file(path)
            except FileNotFoundError:
                raise SessionNotFoundError(
                    f"no session {session_id!r} in {self.directory}"
                ) from None

        data = await asyncio.to_thread(read)
        session = AgentSession.from_json(data, source=str(path))
        session.mark_stored(session.revision or "", data.decode("utf-8", "replace"))
        return session

    async def delete(self, session_id: str) -> bool:
        path = self._path(session_id)

        def remove() -> bool:
            with self._locked():
                try:
                    path.unlink()
                except FileNotFoundError:
                    return False
                return True

        return await asyncio.to_thread(remove)

    async def list(self) -> list[str]:
        def scan() -> list[str]:
            if not self.directory.is_dir():
                return []
            with self._locked():
                found: list[tuple[float, str]] = []
                for p in self.directory.glob("*.json"):
                    if p.name.startswith("."):
                        continue
                    with contextlib.suppress(FileNotFoundError):
                        found.append((p.stat().st_mtime, p.stem))
            found.sort(reverse=True)
            return [stem for _, stem in found]

        return await asyncio.to_thread(scan)

    # -- leases: `.leases/<id>.json`, read and written under the folder's lock ----------

    def _lease_path(self, session_id: str) -> Path:
        return self.directory / ".leases" / f"{_check_id(session_id)}.json"

    async def take_lease(self, session_id: str, holder: str, seconds: float) -> SessionLease:
        path = self._lease_path(session_id)

        def take() -> SessionLease:
            with self._locked():
                held = _read_lease(path, session_id)
                lease = lease_after(held, session_id, holder, seconds, time.time())
                if lease is None:
                    assert held is not None
                    return held
                _write_lease(path, lease)
                return lease

        return await asyncio.to_thread(take)

    async def release_lease(self, session_id: str, holder: str) -> None:
        path = self._lease_path(session_id)

        def release() -> None:
            with self._locked():
                held = _read_lease(path, session_id)
                if held is not None and held.holder == holder:
                    path.unlink(missing_ok=True)

        await asyncio.to_thread(release)

    async def read_lease(self, session_id: str) -> SessionLease | None:
        path = self._lease_path(session_id)

        def read() -> SessionLease | None:
            with self._locked():
                return standing(_read_lease(path, session_id), time.time())

        return await asyncio.to_thread(read)

    async def cancel_lease(self, session_id: str, reason: str) -> SessionLease | None:
        path = self._lease_path(session_id)

        def cancel() -> SessionLease | None:
            with self._locked():
                held = standing(_read_lease(path, session_id), time.time())
                if held is None:
                    return None
                held = replace(held, cancel=reason)
                _write_lease(path, held)
                return held

        return await asyncio.to_thread(cancel)


def _read_lease(path: Path, session_id: str) -> SessionLease | None:
    """The lease file's lease; None when there is none, or when it cannot be read (a
    writer died mid-write: such a lease is no one's)."""
    try:
        data = json.loads(read_plain_file(path, 64 * 1024))
        return SessionLease(
            session_id=session_id,
            holder=str(data["holder"]),
            expires_at=float(data["expires_at"]),
            cancel=None if data.get("cancel") is None else str(data["cancel"]),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, SessionError) as exc:
        log.warning("ignoring the unreadable lease file %s: %s", path, exc)
        return None


def _write_lease(path: Path, lease: SessionLease) -> None:
    """Replace the lease file (a lease need not outlive a power cut: it lapses anyway)."""
    private_dir(path.parent)
    record = {"holder": lease.holder, "expires_at": lease.expires_at, "cancel": lease.cancel}
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(json.dumps(record))
    os.replace(tmp, path)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS raf_sessions (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    updated_at REAL NOT NULL,
    revision TEXT NOT NULL DEFAULT ''
)
"""

_LEASES = """
CREATE TABLE IF NOT EXISTS raf_session_leases (
    id TEXT PRIMARY KEY,
    holder TEXT NOT NULL,
    expires_at REAL NOT NULL,
    cancel TEXT
)
"""


def _create_tables(conn: sqlite3.Connection) -> None:
    conn.execute(_SCHEMA)
    conn.execute(_LEASES)
    for statement in RUN_TABLES:
        conn.execute(statement)
    columns = {row[1] for row in conn.execute("PRAGMA table_info(raf_sessions)")}
    if "revision" not in columns:  # a file written before revisions existed
        conn.execute("ALTER TABLE raf_sessions ADD COLUMN revision TEXT NOT NULL DEFAULT ''")


class SqliteSessionStore(SqliteRuns):
    """Sessions in one SQLite file (WAL mode): the default store, no server needed. Their
    leases are rows of `raf_session_leases`, changed in `BEGIN IMMEDIATE` transactions;
    their runs and run events are rows of `raf_runs` and `raf_run_events` (`SqliteRuns`)."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._connections = PerThread(self._open)
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        return self._connections.get()

    def _open(self) -> sqlite3.Connection:
        return open_wal(self.path, self.timeout, _create_tables, self._refused)

    def _refused(self, exc: sqlite3.OperationalError) -> SessionStoreError:
        return SessionStoreError(f"cannot open session store {self.path}: {exc}")

    async def _run(self, work: Callable[[], T]) -> T:
        """`work` in a thread; a failure of SQLite itself (the file locked past the
        timeout, unreadable, not a database; its folder out of reach) is the store's
        `SessionStoreError`."""
        try:
            return await asyncio.to_thread(work)
        except (sqlite3.Error, OSError) as exc:
            raise SessionStoreError(f"session store {self.path}: {exc}") from None

    async def save(self, session: AgentSession) -> None:
        expected = session.revision
        revision = next_revision(expected)
        text = session.to_json(revision=revision)

        def write() -> None:
            conn = self._connect()
            if expected is None:
                cur = conn.execute(
                    "INSERT INTO raf_sessions (id, data, updated_at, revision) "
                    "VALUES (?, ?, ?, ?) ON CONFLICT(id) DO NOTHING",
                    (session.id, text, session.updated_at, revision),
                )
            else:
                cur = conn.execute(
                    "UPDATE raf_sessions SET data = ?, updated_at = ?, revision = ? "
                    "WHERE id = ? AND revision = ?",
                    (text, session.updated_at, revision, session.id, expected),
                )
            if cur.rowcount != 1:
                row = conn.execute(
                    "SELECT revision FROM raf_sessions WHERE id = ?", (session.id,)
                ).fetchone()
                raise SessionConflictError(
                    session.id,
                    expected=expected,
                    stored=None if row is None else str(row[0]),
                    where=str(self.path),
                )

        await self._run(write)
        session.mark_stored(revision, text)

    async def load(self, session_id: str) -> AgentSession:
        def read() -> tuple[str, str] | None:
            row = (
                self._connect()
                .execute("SELECT data, revision FROM raf_sessions WHERE id = ?", (session_id,))
                .fetchone()
            )
            return None if row is None else (str(row[0]), str(row[1]))

        found = await self._run(read)
        if found is None:
            raise SessionNotFoundError(f"no session {session_id!r} in {self.path}")
        text, revision = found
        session = AgentSession.from_json(text, source=f"session {session_id!r} in {self.path}")
        session.mark_stored(revision, text)
        return session

    async def check_writable(self, within: float) -> None:
        """Return once a write could start: the file's write lock is taken and let go at
        once (in WAL mode a reader is never blocked, so a load alone misses a file that
        another connection holds locked); `SessionStoreError` when the lock is not had
        within `within` seconds. A connection of its own, with that busy timeout, so the
        thread is free again by then."""

        def take_lock() -> None:
            conn = sqlite3.connect(self.path, timeout=within, isolation_level=None)
            try:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("ROLLBACK")
            finally:
                conn.close()

        await self._run(take_lock)

    async def delete(self, session_id: str) -> bool:
        def remove() -> bool:
            cur = self._connect().execute("DELETE FROM raf_sessions WHERE id = ?", (session_id,))
            return cur.rowcount > 0

        return await self._run(remove)

    async def list(self) -> list[str]:
        def scan() -> list[str]:
            rows = (
                self._connect()
                .execute("SELECT id FROM raf_sessions ORDER BY updated_at DESC")
                .fetchall()
            )
            return [str(r[0]) for r in rows]

        return await self._run(scan)

    # -- leases ---------------------------------------------------------------------------

    def _lease_row(self, conn: sqlite3.Connection, session_id: str) -> SessionLease | None:
        row = conn.execute(
            "SELECT holder, expires_at, cancel FROM raf_session_leases WHERE id = ?",
            (session_id,),
        ).fetchone()
        if row is None:
            return None
        return SessionLease(
            session_id=session_id, holder=str(row[0]), expires_at=float(row[1]), cancel=row[2]
        )

    def _write_lease(self, conn: sqlite3.Connection, lease: SessionLease) -> None:
        conn.execute(
            "INSERT OR REPLACE INTO raf_session_leases (id, holder, expires_at, cancel) "
            "VALUES (?, ?, ?, ?)",
            (lease.session_id, lease.holder, lease.expires_at, lease.cancel),
        )

    @contextlib.contextmanager
    def _immediate(self) -> Iterator[sqlite3.Connection]:
        """A write transaction taken at once, so two processes never both read a lease
        free and both take it."""
        conn = self._connect()
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield conn
        except BaseException:
            conn.execute("ROLLBACK")
            raise
        conn.execute("COMMIT")

    async def take_lease(self, session_id: str, holder: str, seconds: float) -> SessionLease:
        def take() -> SessionLease:
            with self._immediate() as conn:
                held = self._lease_row(conn, session_id)
                lease = lease_after(held, session_id, holder, seconds, time.time())
                if lease is None:
                    assert held is not None
                    return held
                self._write_lease(conn, lease)
                return lease

        return await self._run(take)

    async def release_lease(self, session_id: str, holder: str) -> None:
        def release() -> None:
            self._connect().execute(
                "DELETE FROM raf_session_leases WHERE id = ? AND holder = ?", (session_id, holder)
            )

        await self._run(release)

    async def read_lease(self, session_id: str) -> SessionLease | None:
        def read() -> SessionLease | None:
            return standing(self._lease_row(self._connect(), session_id), time.time())

        return await self._run(read)

    async def cancel_lease(self, session_id: str, reason: str) -> SessionLease | None:
        def cancel() -> SessionLease | None:
            with self._immediate() as conn:
                held = standing(self._lease_row(conn, session_id), time.time())
                if held is None:
                    return None
                held = replace(held, cancel=reason)
                self._write_lease(conn, held)
                return held

        return await self._run(cancel)
