"""Sessions in a PostgreSQL table, shared by every worker that reaches the database."""

from __future__ import annotations

from raf.core.errors import SessionConflictError, SessionNotFoundError, SessionStoreError
from raf.core.sessions import AgentSession, SessionLease, next_revision
from raf.stores.postgres_pool import PostgresTable
from raf.stores.postgres_runs import RUN_SCHEMA, PostgresRuns

_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {table} (id TEXT PRIMARY KEY, data TEXT NOT NULL, "
    "updated_at DOUBLE PRECISION NOT NULL, revision TEXT NOT NULL DEFAULT '')",
    "CREATE INDEX IF NOT EXISTS {updated_at} ON {table} (updated_at DESC)",
    "CREATE TABLE IF NOT EXISTS {leases} (id TEXT PRIMARY KEY, holder TEXT NOT NULL, "
    "expires_at DOUBLE PRECISION NOT NULL, cancel TEXT)",
    *RUN_SCHEMA,
)

_NOW = "extract(epoch from clock_timestamp())"
"""The database's clock: every worker's leases are timed by the one clock they share."""

_TAKE = (
    "INSERT INTO {leases} AS held (id, holder, expires_at, cancel) "
    f"VALUES (%s, %s, {_NOW} + %s, NULL) "
    "ON CONFLICT (id) DO UPDATE SET holder = EXCLUDED.holder, "
    "expires_at = EXCLUDED.expires_at, "
    "cancel = CASE WHEN held.holder = EXCLUDED.holder THEN held.cancel END "
    f"WHERE held.holder = EXCLUDED.holder OR held.expires_at <= {_NOW} "
    "RETURNING holder, expires_at, cancel"
)
"""Take a free or lapsed lease, or renew one's own, in one statement."""

_READ = f"SELECT holder, expires_at, cancel FROM {{leases}} WHERE id = %s AND expires_at > {_NOW}"
"""The lease standing on a session."""


class PostgresSessionStore(PostgresRuns):
    """Sessions in one PostgreSQL table (created on first use); saves compare the revision
    in one `UPDATE … WHERE revision = …`, so several workers can share the sessions. Their
    leases are rows of `<table>_leases`, timed by the database's clock; their runs and run
    events rows of `<table>_runs` and `<table>_run_events` (`PostgresRuns`)."""

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "raf_sessions",
        create_table: bool = True,
        max_connections: int = 10,
        timeout: float = 10.0,
    ) -> None:
        self._table = PostgresTable(
            dsn,
            kind="session store",
            table=table,
            schema=_SCHEMA,
            create_table=create_table,
            error=SessionStoreError,
            max_connections=max_connections,
            timeout=timeout,
        )
        self.table = table
        self.where = self._table.where
        """The store as errors name it: address (no password) and table."""

    async def save(self, session: AgentSession) -> None:
        expected = session.revision
        revision = next_revision(expected)
        text = session.to_json(revision=revision)
        sql = self._table.sql
        async with self._table.connection() as conn:
            if expected is None:
                cur = await conn.execute(
                    sql(
                        "INSERT INTO {table} (id, data, updated_at, revision) "
                        "VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO NOTHING"
                    ),
                    (session.id, text, session.updated_at, revision),
                )
            else:
                cur = await conn.execute(
                    sql(
                        "UPDATE {table} SET data = %s, updated_at = %s, revision = %s "
                        "WHERE id = %s AND revision = %s"
                    ),
                    (text, session.updated_at, revision, session.id, expected),
                )
            if cur.rowcount != 1:
                found = await conn.execute(
                    sql("SELECT revision FROM {table} WHERE id = %s"), (session.id,)
                )
                row = await found.fetchone()
                raise SessionConflictError(
                    session.id,
                    expected=expected,
                    stored=None if row is None else str(row[0]),
                    where=self.where,
                )
        session.mark_stored(revision, text)

    async def load(self, session_id: str) -> AgentSession:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql("SELECT data, revision FROM {table} WHERE id = %s"),
                (session_id,),
            )
            row = await cur.fetchone()
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r} in {self.where}")
        text, revision = str(row[0]), str(row[1])
        session = AgentSession.from_json(text, source=f"session {session_id!r} in {self.where}")
        session.mark_stored(revision, text)
        return session

    async def delete(self, session_id: str) -> bool:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql("DELETE FROM {table} WHERE id = %s"), (session_id,)
            )
            return cur.rowcount > 0

    async def list(self) -> list[str]:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql("SELECT id FROM {table} ORDER BY updated_at DESC")
            )
            return [str(row[0]) for row in await cur.fetchall()]

    def _lease(self, session_id: str, row: tuple[object, ...]) -> SessionLease:
        return SessionLease(
            session_id=session_id,
            holder=str(row[0]),
            expires_at=float(str(row[1])),
            cancel=None if row[2] is None else str(row[2]),
        )

    async def take_lease(self, session_id: str, holder: str, seconds: float) -> SessionLease:
        sql = self._table.sql
        async with self._table.connection() as conn:
            for _ in range(3):  # a lease given back between the two statements: again
                cur = await conn.execute(sql(_TAKE), (session_id, holder, seconds))
                row = await cur.fetchone()
                if row is None:
                    cur = await conn.execute(sql(_READ), (session_id,))
                    row = await cur.fetchone()
                if row is not None:
                    return self._lease(session_id, row)
        raise self._table.fail(f"the lease on session {session_id!r} changed hands 3 times")

    async def release_lease(self, session_id: str, holder: str) -> None:
        async with self._table.connection() as conn:
            await conn.execute(
                self._table.sql("DELETE FROM {leases} WHERE id = %s AND holder = %s"),
                (session_id, holder),
            )

    async def read_lease(self, session_id: str) -> SessionLease | None:
        async with self._table.connection() as conn:
            cur = await conn.execute(self._table.sql(_READ), (session_id,))
            row = await cur.fetchone()
        return None if row is None else self._lease(session_id, row)

    async def cancel_lease(self, session_id: str, reason: str) -> SessionLease | None:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql(
                    "UPDATE {leases} SET cancel = %s "
                    f"WHERE id = %s AND expires_at > {_NOW} "
                    "RETURNING holder, expires_at, cancel"
                ),
                (reason, session_id),
            )
            row = await cur.fetchone()
        return None if row is None else self._lease(session_id, row)

    async def close(self) -> None:
        """Close this event loop's connections (the store opens new ones if used again)."""
        await self._table.close()
