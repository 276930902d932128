"""Workflow checkpoints in a PostgreSQL table, so a run paused or interrupted on one worker
can be resumed on another that reaches the same database."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import cast

from raf.core.errors import CheckpointError, CheckpointNotFoundError
from raf.stores.checkpoints import Checkpoint, CheckpointInfo, Status, answer_claimed
from raf.stores.postgres_pool import PostgresTable

# `seq` orders checkpoints as they were written (a rewrite moves one to the front), the
# same order the SQLite store lists them in; `created_at` alone can tie.
_SCHEMA = (
    "CREATE TABLE IF NOT EXISTS {table} (seq BIGSERIAL PRIMARY KEY, id TEXT UNIQUE NOT NULL, "
    "run_id TEXT NOT NULL, workflow TEXT NOT NULL, superstep INTEGER NOT NULL, "
    "status TEXT NOT NULL, created_at DOUBLE PRECISION NOT NULL, data TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS {run_seq} ON {table} (run_id, seq DESC)",
    "CREATE TABLE IF NOT EXISTS {claims} (checkpoint_id TEXT NOT NULL, "
    "request_id TEXT NOT NULL, claimant TEXT NOT NULL, claimed_at DOUBLE PRECISION NOT NULL, "
    "PRIMARY KEY (checkpoint_id, request_id))",
)
_INFO = "SELECT id, run_id, workflow, superstep, status, created_at FROM {table}"


class PostgresCheckpointStore:
    """Checkpoints in one PostgreSQL table (created on first use)."""

    def __init__(
        self,
        dsn: str,
        *,
        table: str = "raf_checkpoints",
        create_table: bool = True,
        max_connections: int = 10,
        timeout: float = 10.0,
    ) -> None:
        self._table = PostgresTable(
            dsn,
            kind="checkpoint store",
            table=table,
            schema=_SCHEMA,
            create_table=create_table,
            error=CheckpointError,
            max_connections=max_connections,
            timeout=timeout,
        )
        self.table = table
        self.where = self._table.where
        """The store as errors name it: address (no password) and table."""

    async def save(self, checkpoint: Checkpoint) -> None:
        async with self._table.connection() as conn:
            await conn.execute(
                self._table.sql(
                    "INSERT INTO {table} "
                    "(id, run_id, workflow, superstep, status, created_at, data) "
                    "VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
                    "seq = DEFAULT, run_id = EXCLUDED.run_id, workflow = EXCLUDED.workflow, "
                    "superstep = EXCLUDED.superstep, status = EXCLUDED.status, "
                    "created_at = EXCLUDED.created_at, data = EXCLUDED.data"
                ),
                (
                    checkpoint.id,
                    checkpoint.run_id,
                    checkpoint.workflow,
                    checkpoint.superstep,
                    checkpoint.status,
                    checkpoint.created_at,
                    checkpoint.to_json(),
                ),
            )

    async def load(self, checkpoint_id: str) -> Checkpoint:
        async with self._table.connection() as conn:
            cur = await conn.execute(
                self._table.sql("SELECT data FROM {table} WHERE id = %s"), (checkpoint_id,)
            )
            row = await cur.fetchone()
        if row is None:
            raise CheckpointNotFoundError(f"no checkpoint {checkpoint_id!r} in {self.where}")
        return Checkpoint.from_json(
            str(row[0]), source=f"checkpoint {checkpoint_id!r} in {self.where}"
        )

    async def list(self, run_id: str | None = None) -> list[CheckpointInfo]:
        async with self._table.connection() as conn:
            if run_id is None:
                cur = await conn.execute(self._table.sql(_INFO + " ORDER BY seq DESC"))
            else:
                cur = await conn.execute(
                    self._table.sql(_INFO + " WHERE run_id = %s ORDER BY seq DESC"), (run_id,)
                )
            rows = await cur.fetchall()
        return [
            CheckpointInfo(
                id=str(r[0]),
                run_id=str(r[1]),
                workflow=str(r[2]),
                superstep=int(r[3]),
                status=cast(Status, str(r[4])),
                created_at=float(r[5]),
            )
            for r in rows
        ]

    async def delete(self, checkpoint_id: str) -> bool:
        async with self._table.connection() as conn:
            async with conn.transaction():
                cur = await conn.execute(
                    self._table.sql("DELETE FROM {table} WHERE id = %s"), (checkpoint_id,)
                )
                await conn.execute(
                    self._table.sql("DELETE FROM {claims} WHERE checkpoint_id = %s"),
                    (checkpoint_id,),
                )
            return cur.rowcount > 0

    async def claim(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        # The primary key decides: of two concurrent inserts one waits for the other's
        # commit and then inserts nothing; the row read back names the winner. A refusal
        # raised inside the transaction rolls back this claimant's other rows.
        async with self._table.connection() as conn, conn.transaction():
            for rid in sorted(set(request_ids)):
                await conn.execute(
                    self._table.sql(
                        "INSERT INTO {claims} VALUES (%s, %s, %s, %s) "
                        "ON CONFLICT (checkpoint_id, request_id) DO NOTHING"
                    ),
                    (checkpoint_id, rid, claimant, time.time()),
                )
                cur = await conn.execute(
                    self._table.sql(
                        "SELECT claimant, claimed_at FROM {claims} "
                        "WHERE checkpoint_id = %s AND request_id = %s"
                    ),
                    (checkpoint_id, rid),
                )
                row = await cur.fetchone()
                if row is not None and str(row[0]) != claimant:
                    raise answer_claimed(checkpoint_id, rid, float(row[1]))

    async def release(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        async with self._table.connection() as conn:
            for rid in request_ids:
                await conn.execute(
                    self._table.sql(
                        "DELETE FROM {claims} "
                        "WHERE checkpoint_id = %s AND request_id = %s AND claimant = %s"
                    ),
                    (checkpoint_id, rid, claimant),
                )

    async def close(self) -> None:
        """Close this event loop's connections (the store opens new ones if used again)."""
        await self._table.close()
