"""What raf's PostgreSQL stores share: a connection pool per event loop, one table created
on first use, and errors that name the store and its address but never the password.

psycopg 3 (the `postgres` extra) is imported only here and in the stores, when used.
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import string
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any

from raf.core.errors import MissingExtraError, RafError

if TYPE_CHECKING:
    from psycopg import AsyncConnection
    from psycopg.sql import Composed
    from psycopg_pool import AsyncConnectionPool

_TABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,62}$")
_CREATE_LOCK = 7236521
"""Advisory lock key held while creating tables: two workers creating one at once would
collide in PostgreSQL's catalog (`CREATE TABLE IF NOT EXISTS` is not safe concurrently)."""


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


def _password(dsn: str) -> str | None:
    try:
        from psycopg.conninfo import conninfo_to_dict

        value = conninfo_to_dict(dsn).get("password")
    except Exception:
        return None
    return str(value) if value else None


class PostgresTable:
    """One table of a PostgreSQL database, reached through a pool of this event loop (a
    connection belongs to the loop that made it, so a new `asyncio.run` gets new ones)."""

    def __init__(
        self,
        dsn: str,
        *,
        kind: str,
        table: str,
        schema: Sequence[str],
        create_table: bool,
        error: type[RafError],
        max_connections: int,
        timeout: float,
    ) -> None:
        if not _TABLE.match(table):
            raise error(f"PostgreSQL {kind}: table name {table!r} is not valid")
        self.dsn = dsn
        self.table = table
        self.schema = schema
        """Statements that create the table and its indexes (see `sql`)."""
        self.create_table = create_table
        self.error = error
        self.max_connections = max_connections
        self.timeout = timeout
        self.where = f"PostgreSQL {kind} at {postgres_address(dsn)} (table {table})"
        self._pool: AsyncConnectionPool[AsyncConnection[Any]] | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._opening: asyncio.Lock | None = None
        self._checking: asyncio.Task[None] | None = None

    def fail(self, exc: BaseException | str) -> RafError:
        """An error naming the store and address; a password is never repeated."""
        text = exc if isinstance(exc, str) else (str(exc).strip() or type(exc).__name__)
        password = _password(self.dsn)
        if password:
            text = text.replace(password, "***")
        return self.error(f"{self.where}: {text}")

    def sql(self, text: str) -> Composed:
        """`text` with `{table}` replaced by the quoted table name and any other `{name}`
        by the quoted `<table>_<name>` (the table's indexes)."""
        from psycopg import sql

        names = {n for _, n, _, _ in string.Formatter().parse(text) if n and n != "table"}
        others = {n: sql.Identifier(f"{self.table}_{n}") for n in names}
        return sql.SQL(text).format(table=sql.Identifier(self.table), **others)

    async def _open(self) -> AsyncConnectionPool[AsyncConnection[Any]]:
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._pool_loop is loop:
            return self._pool
        if self._pool_loop is not loop or self._opening is None:
            self._pool, self._pool_loop, self._opening = None, loop, asyncio.Lock()
        async with self._opening:
            if self._pool is not None:
                return self._pool
            try:
                import psycopg
                from psycopg_pool import AsyncConnectionPool
            except ImportError as exc:
                raise MissingExtraError(f"the {self.where}", "postgres", exc.name) from exc
            options = {"autocommit": True, "connect_timeout": max(2, round(self.timeout))}
            try:  # one direct connection first: its error names the real cause
                conn = await psycopg.AsyncConnection.connect(self.dsn, **options)  # type: ignore[arg-type]
            except (psycopg.Error, OSError) as exc:
                raise self.fail(exc) from None
            try:
                await self._prepare(conn)
            finally:
                await conn.close()
            pool: AsyncConnectionPool[AsyncConnection[Any]] = AsyncConnectionPool(
                self.dsn,
                min_size=0,
                max_size=self.max_connections,
                timeout=self.timeout,
                kwargs=options,
                open=False,
            )
            await pool.open()
            self._pool = pool
            return pool

    async def _prepare(self, conn: AsyncConnection[Any]) -> None:
        """Create the table, or check that it is there."""
        import psycopg

        try:
            if self.create_table:
                async with conn.transaction():
                    await conn.execute("SELECT pg_advisory_xact_lock(%s)", (_CREATE_LOCK,))
                    for statement in self.schema:
                        await conn.execute(self.sql(statement))
            else:
                await conn.execute(self.sql("SELECT 1 FROM {table} LIMIT 0"))
        except psycopg.errors.UndefinedTable:
            raise self.fail(
                "the table does not exist; create it or pass create_table=True"
            ) from None
        except psycopg.Error as exc:
            raise self.fail(exc) from None

    @asynccontextmanager
    async def connection(self) -> AsyncIterator[AsyncConnection[Any]]:
        """A pooled connection; every driver failure becomes the store's error here."""
        pool = await self._open()  # first: it reports a missing psycopg
        import psycopg
        from psycopg_pool import PoolTimeout

        try:
            async with pool.connection() as conn:
                yield conn
        except psycopg.errors.UndefinedTable:
            raise self.fail("the table does not exist any more") from None
        except PoolTimeout:
            raise self.fail(
                f"no connection within {self.timeout:g}s "
                "(the server is unreachable or every connection is busy)"
            ) from None
        except psycopg.OperationalError as exc:
            self._check_idle(pool)
            raise self.fail(exc) from None
        except (psycopg.Error, OSError) as exc:
            raise self.fail(exc) from None

    def _check_idle(self, pool: AsyncConnectionPool[AsyncConnection[Any]]) -> None:
        """After a connection failed, test the idle ones in the background and drop the
        dead: once a restarted server is back, the next calls get live connections, not
        one failure per connection the pool kept from before."""
        if self._checking is not None and not self._checking.done():
            return

        async def check() -> None:
            with contextlib.suppress(Exception):  # a pool closed meanwhile: nothing to do
                await pool.check()

        self._checking = asyncio.get_running_loop().create_task(check())

    async def close(self) -> None:
        """Close this event loop's connections (new ones are opened if used again)."""
        pool, self._pool = self._pool, None
        if pool is not None and self._pool_loop is asyncio.get_running_loop():
            await pool.close()
        self._pool_loop = None
