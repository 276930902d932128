"""Sessions in a PostgreSQL table, shared by every worker that reaches the database.

psycopg 3 (the `postgres` extra) is imported only here, when the store is first used.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from raf.core.errors import (
    MissingExtraError,
    SessionConflictError,
    SessionError,
    SessionNotFoundError,
)
from raf.core.sessions import AgentSession, next_revision

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg_pool import AsyncConnectionPool

_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")


def postgres_address(dsn: str) -> str:
    """The DSN as people read it, without the password: `postgresql://user@host:port/db`."""
    try:
        from psycopg.conninfo import conninfo_to_dict

        parts = conninfo_to_dict(dsn)
    except Exception:
        return "postgresql://<unparsable address>"
    user = f"{parts['user']}@" if parts.get("user") else ""
    host = str(parts.get("host") or parts.get("hostaddr") or "localhost")
    port = f":{parts['port']}" if parts.get("port") else ""
    return f"postgresql://{user}{host}{port}/{parts.get('dbname') or ''}"


class PostgresSessionStore:
    """Sessions in one PostgreSQL table (created on first use); saves compare the revision
    in one `UPDATE … WHERE revision = …`, so several workers can share the sessions."""

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "raf_sessions",
        create_table: bool = True,
        max_connections: int = 10,
        timeout: float = 10.0,
    ) -> None:
        if not _TABLE.match(table):
            raise SessionError(f"PostgreSQL session store: table name {table!r} is not valid")
        self.dsn = dsn
        self.table = table
        self.create_table = create_table
        self.max_connections = max_connections
        self.timeout = timeout
        self.address = postgres_address(dsn)
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._opening = asyncio.Lock()

    def _where(self) -> str:
        return f"PostgreSQL session store at {self.address} (table {self.table})"

    def _error(self, exc: BaseException) -> SessionError:
        """A store error naming the store and address; a password is never repeated."""
        text = str(exc).strip() or type(exc).__name__
        password = _password(self.dsn)
        if password:
            text = text.replace(password, "***")
        return SessionError(f"{self._where()}: {text}")

    async def _open(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        """The pool of this event loop: connections belong to the loop that made them, so a
        new loop (another `asyncio.run`) gets its own pool."""
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._pool_loop is loop:
            return self._pool
        if self._pool_loop is not loop:
            self._opening = asyncio.Lock()
            self._pool = None
        async with self._opening:
            if self._pool is not None:
                return self._pool
            try:
                import psycopg
                from psycopg_pool import AsyncConnectionPool
            except ImportError as exc:
                raise MissingExtraError(
                    "the PostgreSQL session store", "postgres", exc.name
                ) from exc
            try:  # one direct connection first: its error names the real cause
                conn = await psycopg.AsyncConnection.connect(
                    self.dsn, autocommit=True, connect_timeout=max(2, round(self.timeout))
                )
            except (psycopg.Error, OSError) as exc:
                raise self._error(exc) from None
            try:
                await self._prepare(conn)
            finally:
                await conn.close()
            pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
                self.dsn,
                min_size=0,
                max_size=self.max_connections,
                timeout=self.timeout,
                kwargs={"autocommit": True, "connect_timeout": max(2, round(self.timeout))},
                open=False,
            )
            await pool.open()
            self._pool, self._pool_loop = pool, loop
            return pool

    async def _prepare(self, conn: AsyncConnection[Any]) -> None:
        """Create the table (under an advisory lock: two workers creating it at once would
        collide in PostgreSQL's catalog), or check that it is there."""
        import psycopg
        from psycopg import sql

        table = sql.Identifier(self.table)
        try:
            if self.create_table:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(7236521)")
                    await conn.execute(
                        sql.SQL(
                            "CREATE TABLE IF NOT EXISTS {} (id TEXT PRIMARY KEY, "
                            "data TEXT NOT NULL, updated_at DOUBLE PRECISION NOT NULL, "
                            "revision TEXT NOT NULL DEFAULT '')"
                        ).format(table)
                    )
                    await conn.execute(
                        sql.SQL("CREATE INDEX IF NOT EXISTS {} ON {} (updated_at DESC)").format(
                            sql.Identifier(f"{self.table}_updated_at"), table
                        )
                    )
            else:
                await conn.execute(sql.SQL("SELECT 1 FROM {} LIMIT 0").format(table))
        except psycopg.errors.UndefinedTable:
            raise SessionError(
                f"{self._where()}: the table does not exist; create it or pass create_table=True"
            ) from None
        except psycopg.Error as exc:
            raise self._error(exc) from None

    @asynccontextmanager
    async def _connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection; every driver failure becomes a `SessionError` here."""
        pool = await self._open()  # first: it reports a missing psycopg
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            async with pool.connection() as conn:
                yield conn
        except psycopg.errors.UndefinedTable:
            raise SessionError(f"{self._where()}: the table does not exist any more") from None
        except PoolTimeout:
            raise SessionError(
                f"{self._where()}: no connection within {self.timeout:g}s "
                "(the server is unreachable or every connection is busy)"
            ) from None
        except (psycopg.Error, OSError) as exc:
            raise self._error(exc) from None

    def _sql(self, text: str) -> Any:
        from psycopg import sql

        return sql.SQL(text).format(table=sql.Identifier(self.table))

    async def save(self, session: AgentSession) -> None:
        expected = session.revision
        revision = next_revision(expected)
        text = session.to_json(revision=revision)
        async with self._connection() as conn:
            if expected is None:
                cur = await conn.execute(
                    self._sql(
                        "INSERT INTO {table} (id, data, updated_at, revision) "
                        "VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO NOTHING"
                    ),
                    (session.id, text, session.updated_at, revision),
                )
            else:
                cur = await conn.execute(
                    self._sql(
                        "UPDATE {table} SET data = %s, updated_at = %s, revision = %s "
                        "WHERE id = %s AND revision = %s"
                    ),
                    (text, session.updated_at, revision, session.id, expected),
                )
            if cur.rowcount != 1:
                found = await conn.execute(
                    self._sql("SELECT revision FROM {table} WHERE id = %s"), (session.id,)
                )
                row = await found.fetchone()
                raise SessionConflictError(
                    session.id,
                    expected=expected,
                    stored=None if row is None else str(row[0]),
                    where=self._where(),
                )
        session.mark_stored(revision, text)

    async def load(self, session_id: str) -> AgentSession:
        async with self._connection() as conn:
            cur = await conn.execute(
                self._sql("SELECT data, revision FROM {table} WHERE id = %s"), (session_id,)
            )
            row = await cur.fetchone()
        if row is None:
            raise SessionNotFoundError(f"no session {session_id!r} in {self._where()}")
        text, revision = str(row[0]), str(row[1])
        session = AgentSession.from_json(text, source=f"session {session_id!r} in {self._where()}")
        session.mark_stored(revision, text)
        return session

    async def delete(self, session_id: str) -> bool:
        async with self._connection() as conn:
            cur = await conn.execute(self._sql("DELETE FROM {table} WHERE id = %s"), (session_id,))
            return cur.rowcount > 0

    async def list(self) -> list[str]:
        async with self._connection() as conn:
            cur = await conn.execute(self._sql("SELECT id FROM {table} ORDER BY updated_at DESC"))
            return [str(row[0]) for row in await cur.fetchall()]

    async def close(self) -> None:
        """Close this event loop's connections (the store opens new ones if used again)."""
        pool, self._pool = self._pool, None
        if pool is not None and self._pool_loop is asyncio.get_running_loop():
            await pool.close()
        self._pool_loop = None


def _password(dsn: str) -> str | None:
    try:
        from psycopg.conninfo import conninfo_to_dict

        value = conninfo_to_dict(dsn).get("password")
    except Exception:
        return None
    return str(value) if value else None
