"""Opening a store's SQLite file: private, in WAL mode, its tables made; retried while
locked, because two processes opening a new file at once can meet a lock that SQLite's
busy timeout does not cover. A store keeps one connection per thread (`PerThread`): a
SQLite connection is used only in the thread that made it."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from raf.core.private_files import private_file

T = TypeVar("T")


class PerThread(Generic[T]):
    """One value per thread, made by `make` on the thread's first `get`."""

    def __init__(self, make: Callable[[], T]) -> None:
        self._make = make
        self._local = threading.local()

    def get(self) -> T:
        try:
            value: T = self._local.value
        except AttributeError:
            value = self._local.value = self._make()
        return value


def open_wal(
    path: Path,
    timeout: float,
    setup: Callable[[sqlite3.Connection], None],
    refused: Callable[[sqlite3.OperationalError], Exception],
) -> sqlite3.Connection:
    """A connection to the file at `path` (made private to its user) in WAL mode, after
    `setup` made its tables; a lock is waited out for up to `timeout` seconds, and any
    other failure, or a lock past that, closes the connection and raises `refused(exc)`."""
    private_file(path)
    conn = sqlite3.connect(path, timeout=timeout, isolation_level=None)
    deadline = time.monotonic() + timeout
    delay = 0.01
    while True:
        try:
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            setup(conn)
            return conn
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() > deadline:
                conn.close()
                raise refused(exc) from exc
            time.sleep(delay)
            delay = min(delay * 2, 0.2)
