"""Run records and run events in the SQLite session store's file (`SessionRuns`), so
every process that opens the file sees each session's runs and their queue."""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TypeVar

from raf.core.errors import SessionStoreError
from raf.stores.runs import RUN_COLUMNS, RunRecord, run_json, stored_run

T = TypeVar("T")

RUN_TABLES = (
    "CREATE TABLE IF NOT EXISTS raf_runs (seq INTEGER PRIMARY KEY AUTOINCREMENT, "
    "id TEXT NOT NULL UNIQUE, session TEXT NOT NULL, data TEXT NOT NULL, cancel TEXT, "
    "ended_at REAL, expired INTEGER NOT NULL DEFAULT 0)",
    "CREATE INDEX IF NOT EXISTS raf_runs_session ON raf_runs (session, seq)",
    "CREATE TABLE IF NOT EXISTS raf_run_events (run_id TEXT NOT NULL, n INTEGER NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (run_id, n))",
)
"""The tables (created with the sessions' own): `seq` is SQLite's, so arrival order is
the order in which processes added their runs."""


class SqliteRuns:
    """`SessionRuns` on the SQLite file of `SqliteSessionStore` (mixed into it)."""

    path: Path
    _connect: Callable[[], sqlite3.Connection]
    """The store's own connection (`SqliteSessionStore._connect`)."""

    async def _runs_call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        def call() -> T:
            return work(self._connect())

        try:
            return await asyncio.to_thread(call)
        except (sqlite3.Error, OSError) as exc:
            raise SessionStoreError(f"session store {self.path}: {exc}") from None

    async def add_run(self, run: RunRecord) -> RunRecord:
        def add(conn: sqlite3.Connection) -> int:
            cur = conn.execute(
                "INSERT INTO raf_runs (id, session, data, cancel, ended_at) VALUES (?, ?, ?, ?, ?)",
                (run.id, run.session, run_json(run), run.cancel, run.ended_at),
            )
            return int(cur.lastrowid or 0)

        seq = await self._runs_call(add)
        return RunRecord.from_dict({**run.to_dict(), "seq": seq})

    async def save_run(self, run: RunRecord) -> None:
        await self._runs_call(
            lambda conn: conn.execute(
                "UPDATE raf_runs SET data = ?, ended_at = ? WHERE id = ?",
                (run_json(run), run.ended_at, run.id),
            )
        )

    async def load_run(self, run_id: str) -> RunRecord | None:
        def load(conn: sqlite3.Connection) -> RunRecord | None:
            row = conn.execute(
                f"SELECT {RUN_COLUMNS} FROM raf_runs WHERE id = ?", (run_id,)
            ).fetchone()
            return None if row is None else stored_run(*row)

        return await self._runs_call(load)

    async def cancel_run(self, run_id: str, reason: str) -> RunRecord | None:
        def cancel(conn: sqlite3.Connection) -> RunRecord | None:
            conn.execute(
                "UPDATE raf_runs SET cancel = ? WHERE id = ? AND ended_at IS NULL",
                (reason, run_id),
            )
            row = conn.execute(
                f"SELECT {RUN_COLUMNS} FROM raf_runs WHERE id = ?", (run_id,)
            ).fetchone()
            return None if row is None else stored_run(*row)

        return await self._runs_call(cancel)

    async def session_runs(self, session: str, *, active: bool = False) -> list[RunRecord]:
        where = "session = ? AND ended_at IS NULL" if active else "session = ?"

        def scan(conn: sqlite3.Connection) -> list[RunRecord]:
            rows = conn.execute(
                f"SELECT {RUN_COLUMNS} FROM raf_runs WHERE {where} ORDER BY seq", (session,)
            ).fetchall()
            return [stored_run(*row) for row in rows]

        return await self._runs_call(scan)

    async def add_run_events(self, run_id: str, first: int, events: Sequence[str]) -> None:
        rows = [(run_id, first + i, event) for i, event in enumerate(events)]
        await self._runs_call(
            lambda conn: conn.executemany(
                "INSERT OR REPLACE INTO raf_run_events (run_id, n, data) VALUES (?, ?, ?)", rows
            )
        )

    async def run_events(self, run_id: str, after: int, limit: int = 500) -> list[tuple[int, str]]:
        def read(conn: sqlite3.Connection) -> list[tuple[int, str]]:
            rows = conn.execute(
                "SELECT n, data FROM raf_run_events WHERE run_id = ? AND n > ? ORDER BY n LIMIT ?",
                (run_id, after, limit),
            ).fetchall()
            return [(int(r[0]), str(r[1])) for r in rows]

        return await self._runs_call(read)

    async def purge_runs(self, ended_before: float) -> int:
        def purge(conn: sqlite3.Connection) -> int:
            conn.execute("BEGIN IMMEDIATE")
            try:
                ids = [
                    str(r[0])
                    for r in conn.execute(
                        "SELECT id FROM raf_runs WHERE ended_at < ? AND expired = 0",
                        (ended_before,),
                    ).fetchall()
                ]
                for run_id in ids:
                    conn.execute("DELETE FROM raf_run_events WHERE run_id = ?", (run_id,))
                    conn.execute("UPDATE raf_runs SET expired = 1 WHERE id = ?", (run_id,))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")
            return len(ids)

        return await self._runs_call(purge)


__all__ = ["RUN_TABLES", "SqliteRuns"]
