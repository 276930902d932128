"""Several workers on one system database: each beats a heartbeat, and a live worker
hands the runs of one whose heartbeat stopped back to the queue, so another finishes them."""

from __future__ import annotations

import contextlib
import logging
import threading
import time

import sqlalchemy as sa
from dbos import DBOS

log = logging.getLogger("raf.durable")

_TABLE = "raf_durable_workers"

LAUNCH_LOCK_TIMEOUT = 120.0
"""Seconds a worker waits for another to finish setting up a shared system database."""


class LaunchLock:
    """Held while a worker checks and migrates a PostgreSQL system database and starts:
    workers launched at the same moment on a fresh database would otherwise create its
    schema together (DBOS checks, then creates) and one of them would fail. A session
    advisory lock on a connection of its own; nothing to hold for SQLite, which serves
    one process."""

    def __init__(self, database: str) -> None:
        self.database = database
        self._engine: sa.Engine | None = None
        self._connection: sa.Connection | None = None

    def acquire(self) -> None:
        if not self.database.startswith(("postgresql://", "postgres://")):
            return
        self._engine = sa.create_engine(engine_url(self.database), pool_size=1)
        self._connection = self._engine.connect()
        deadline = time.monotonic() + LAUNCH_LOCK_TIMEOUT
        while True:
            taken = self._connection.execute(
                sa.text("SELECT pg_try_advisory_lock(hashtext('raf-durable-launch'))")
            ).scalar()
            self._connection.commit()
            if taken:
                return
            if time.monotonic() > deadline:
                self.release()
                raise TimeoutError(
                    f"another worker held the system database's launch lock for more than "
                    f"{LAUNCH_LOCK_TIMEOUT:.0f}s"
                )
            time.sleep(0.1)

    def release(self) -> None:
        if self._connection is not None:
            with contextlib.suppress(sa.exc.SQLAlchemyError):
                self._connection.execute(
                    sa.text("SELECT pg_advisory_unlock(hashtext('raf-durable-launch'))")
                )
                self._connection.commit()
            self._connection.close()
            self._connection = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None


def engine_url(database: str) -> str:
    """The SQLAlchemy URL of a system database (psycopg 3 for PostgreSQL, as DBOS uses)."""
    for prefix in ("postgresql://", "postgres://"):
        if database.startswith(prefix):
            return "postgresql+psycopg://" + database[len(prefix) :]
    return database


class Heartbeat:
    """A thread that records this executor as alive and takes over the dead ones."""

    def __init__(
        self, database: str, *, executor_id: str, interval: float, takeover_after: float
    ) -> None:
        self.database = database
        self.executor_id = executor_id
        self.interval = interval
        self.takeover_after = takeover_after
        self.taken_over: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._engine: sa.Engine | None = None
        self._table = sa.Table(
            _TABLE,
            sa.MetaData(),
            sa.Column("executor_id", sa.String(200), primary_key=True),
            sa.Column("seen", sa.Float, nullable=False),
        )

    def start(self) -> None:
        self._engine = sa.create_engine(engine_url(self.database), pool_size=1)
        self._table.metadata.create_all(self._engine, checkfirst=True)
        self._beat()
        self._stop.clear()
        self._thread = threading.Thread(
            target=self._loop, name="raf-durable-heartbeat", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
            self._thread = None
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    def _beat(self) -> None:
        assert self._engine is not None
        table = self._table
        with self._engine.begin() as db:
            done = db.execute(
                table.update()
                .where(table.c.executor_id == self.executor_id)
                .values(seen=time.time())
            )
            if done.rowcount == 0:
                db.execute(table.insert().values(executor_id=self.executor_id, seen=time.time()))

    def _dead(self) -> list[str]:
        assert self._engine is not None
        table = self._table
        limit = time.time() - self.takeover_after
        with self._engine.begin() as db:
            rows = db.execute(
                sa.select(table.c.executor_id).where(
                    table.c.seen < limit, table.c.executor_id != self.executor_id
                )
            ).all()
        return [str(r[0]) for r in rows]

    def _forget(self, executor_id: str) -> None:
        assert self._engine is not None
        with self._engine.begin() as db:
            db.execute(self._table.delete().where(self._table.c.executor_id == executor_id))

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self._beat()
                for dead in self._dead():
                    # re-enqueueing is idempotent in DBOS: of several workers taking over
                    # the same dead one, exactly one runs each of its workflows
                    handles = DBOS._recover_pending_workflows([dead])
                    log.warning(
                        "worker %s stopped beating; %d of its runs handed back to the queue",
                        dead,
                        len(handles),
                    )
                    self.taken_over.append(dead)
                    self._forget(dead)
            except Exception:  # a database hiccup must not kill the heartbeat
                log.exception("durable heartbeat failed; retrying")
