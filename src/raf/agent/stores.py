"""Session stores: in memory, one JSON file per session, and SQLite. Writes are atomic."""

from __future__ import annotations

import asyncio
import contextlib
import errno
import os
import re
import sqlite3
import stat
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

from raf.core.errors import SessionError, SessionNotFoundError
from raf.core.sessions import AgentSession

_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


def _check_id(session_id: str) -> str:
    if not _SAFE_ID.match(session_id) or session_id in (".", ".."):
        raise SessionError(
            f"session id {session_id!r} is not valid: use 1-128 letters, digits, '_', '-', '.'"
        )
    return session_id


class InMemorySessionStore:
    """Keeps sessions in this process (as JSON, so nothing is shared by reference)."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[float, str]] = {}

    async def save(self, session: AgentSession) -> None:
        self._data[session.id] = (session.updated_at, session.to_json())

    async def load(self, session_id: str) -> AgentSession:
        try:
            _, text = self._data[session_id]
        except KeyError:
            raise SessionNotFoundError(f"no session {session_id!r} in memory") from None
        return AgentSession.from_json(text, source=f"session {session_id!r}")

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


def atomic_write_text(path: Path, text: str) -> None:
    """Write to a temporary file beside `path`, flush it to disk, then rename over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


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


class JsonDirectorySessionStore:
    """One `<id>.json` file per session in a directory; safe across processes."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, session_id: str) -> Path:
        return self.directory / f"{_check_id(session_id)}.json"

    def _lock_path(self) -> Path:
        self.directory.mkdir(parents=True, exist_ok=True)
        return self.directory / ".lock"

    async def save(self, session: AgentSession) -> None:
        text = session.to_json()
        path = self._path(session.id)

        def write() -> None:
            with _file_lock(self._lock_path()):
                atomic_write_text(path, text)

        await asyncio.to_thread(write)

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
        return AgentSession.from_json(data, source=str(path))

    async def delete(self, session_id: str) -> bool:
        path = self._path(session_id)

        def remove() -> bool:
            with _file_lock(self._lock_path()):
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
            files = [p for p in self.directory.glob("*.json") if not p.name.startswith(".")]
            files.sort(key=lambda p: p.stat().st_mtime, reverse=True)
            return [p.stem for p in files]

        return await asyncio.to_thread(scan)


_SCHEMA = """
CREATE TABLE IF NOT EXISTS raf_sessions (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    updated_at REAL NOT NULL
)
"""


class SqliteSessionStore:
    """Sessions in one SQLite file (WAL mode): the default store, no server needed."""

    def __init__(self, path: str | os.PathLike[str], *, timeout: float = 30.0) -> None:
        self.path = Path(path)
        self.timeout = timeout
        self._local = threading.local()
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, timeout=self.timeout, isolation_level=None)
            self._initialise(conn)
            self._local.conn = conn
        return conn

    def _initialise(self, conn: sqlite3.Connection) -> None:
        """Switch to WAL and create the table; retried, because two processes opening a
        new file at once can meet a lock that SQLite's busy timeout does not cover."""
        deadline = time.monotonic() + self.timeout
        delay = 0.01
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute("PRAGMA synchronous=NORMAL")
                conn.execute(_SCHEMA)
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    conn.close()
                    raise SessionError(f"cannot open session store {self.path}: {exc}") from exc
                time.sleep(delay)
                delay = min(delay * 2, 0.2)

    async def save(self, session: AgentSession) -> None:
        text = session.to_json()

        def write() -> None:
            conn = self._connect()
            conn.execute(
                "INSERT INTO raf_sessions (id, data, updated_at) VALUES (?, ?, ?) "
                "ON CONFLICT(id) DO UPDATE SET data = excluded.data, "
                "updated_at = excluded.updated_at",
                (session.id, text, session.updated_at),
            )

        await asyncio.to_thread(write)

    async def load(self, session_id: str) -> AgentSession:
        def read() -> str | None:
            row = (
                self._connect()
                .execute("SELECT data FROM raf_sessions WHERE id = ?", (session_id,))
                .fetchone()
            )
            return None if row is None else str(row[0])

        text = await asyncio.to_thread(read)
        if text is None:
            raise SessionNotFoundError(f"no session {session_id!r} in {self.path}")
        return AgentSession.from_json(text, source=f"session {session_id!r} in {self.path}")

    async def delete(self, session_id: str) -> bool:
        def remove() -> bool:
            cur = self._connect().execute("DELETE FROM raf_sessions WHERE id = ?", (session_id,))
            return cur.rowcount > 0

        return await asyncio.to_thread(remove)

    async def list(self) -> list[str]:
        def scan() -> list[str]:
            rows = (
                self._connect()
                .execute("SELECT id FROM raf_sessions ORDER BY updated_at DESC")
                .fetchall()
            )
            return [str(r[0]) for r in rows]

        return await asyncio.to_thread(scan)
