"""Run records and run events in the PostgreSQL session store's database
(`SessionRuns`): tables `<table>_runs` and `<table>_run_events` beside the sessions and
their leases, so every worker sees each session's runs and their queue."""

from __future__ import annotations

from collections.abc import Sequence

from raf.stores.postgres_pool import PostgresTable
from raf.stores.runs import RUN_COLUMNS, RunRecord, run_json, stored_run

RUN_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {runs} (seq BIGSERIAL PRIMARY KEY, id TEXT NOT NULL UNIQUE, "
    "session TEXT NOT NULL, data TEXT NOT NULL, cancel TEXT, ended_at DOUBLE PRECISION, "
    "expired BOOLEAN NOT NULL DEFAULT FALSE)",
    "CREATE INDEX IF NOT EXISTS {runs_session} ON {runs} (session, seq)",
    "CREATE TABLE IF NOT EXISTS {run_events} (run_id TEXT NOT NULL, n INTEGER NOT NULL, "
    "data TEXT NOT NULL, PRIMARY KEY (run_id, n))",
)
"""The tables (created with the sessions' own); `seq` is the database's sequence, so
arrival order is the order in which workers added their runs."""


class PostgresRuns:
    """`SessionRuns` on the database of `PostgresSessionStore` (mixed into it)."""

    _table: PostgresTable

    async def add_run(self, run: RunRecord) -> RunRecord:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql(
                    "INSERT INTO {runs} (id, session, data, cancel, ended_at) "
                    "VALUES (%s, %s, %s, %s, %s) RETURNING seq"
                ),
                (run.id, run.session, run_json(run), run.cancel, run.ended_at),
            )
            row = await cur.fetchone()
        assert row is not None
        return RunRecord.from_dict({**run.to_dict(), "seq": int(row[0])})

    async def save_run(self, run: RunRecord) -> None:
        async with self._table.connection() as conn:
            await conn.execute(
                self._table.sql("UPDATE {runs} SET data = %s, ended_at = %s WHERE id = %s"),
                (run_json(run), run.ended_at, run.id),
            )

    async def load_run(self, run_id: str) -> RunRecord | None:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql(f"SELECT {RUN_COLUMNS} FROM {{runs}} WHERE id = %s"), (run_id,)
            )
            row = await cur.fetchone()
        return None if row is None else stored_run(*row)

    async def cancel_run(self, run_id: str, reason: str) -> RunRecord | None:
        async with self._table.connection() as conn:
            await conn.execute(
                self._table.sql("UPDATE {runs} SET cancel = %s WHERE id = %s AND ended_at IS NULL"),
                (reason, run_id),
            )
            cur = await conn.execute(
                self._table.sql(f"SELECT {RUN_COLUMNS} FROM {{runs}} WHERE id = %s"), (run_id,)
            )
            row = await cur.fetchone()
        return None if row is None else stored_run(*row)

    async def session_runs(self, session: str, *, active: bool = False) -> list[RunRecord]:
        where = "session = %s AND ended_at IS NULL" if active else "session = %s"
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql(f"SELECT {RUN_COLUMNS} FROM {{runs}} WHERE {where} ORDER BY seq"),
                (session,),
            )
            rows = await cur.fetchall()
        return [stored_run(*row) for row in rows]

    async def add_run_events(self, run_id: str, first: int, events: Sequence[str]) -> None:
        rows = [(run_id, first + i, event) for i, event in enumerate(events)]
        async with self._table.connection() as conn, conn.cursor() as cur:
            await cur.executemany(
                self._table.sql(
                    "INSERT INTO {run_events} (run_id, n, data) VALUES (%s, %s, %s) "
                    "ON CONFLICT (run_id, n) DO UPDATE SET data = EXCLUDED.data"
                ),
                rows,
            )

    async def run_events(self, run_id: str, after: int, limit: int = 500) -> list[tuple[int, str]]:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql(
                    "SELECT n, data FROM {run_events} WHERE run_id = %s AND n > %s "
                    "ORDER BY n LIMIT %s"
                ),
                (run_id, after, limit),
            )
            rows = await cur.fetchall()
        return [(int(r[0]), str(r[1])) for r in rows]

    async def purge_runs(self, ended_before: float) -> int:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql(
                    "UPDATE {runs} SET expired = TRUE WHERE ended_at < %s AND NOT expired "
                    "RETURNING id"
                ),
                (ended_before,),
            )
            ids = [str(r[0]) for r in await cur.fetchall()]
            if ids:
                await conn.execute(
                    self._table.sql("DELETE FROM {run_events} WHERE run_id = ANY(%s)"), (ids,)
                )
        return len(ids)
