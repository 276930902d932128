"""A session store or a checkpoint store named by one string, as the `raf` program and
configuration name it: `postgresql://…`, `redis://…` (sessions), `sqlite:///path`, a
`.sqlite`/`.db` file, a folder of JSON files, or `memory:`."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from raf.core.errors import CheckpointError, SessionError
from raf.core.sessions import SessionStore

if TYPE_CHECKING:
    from raf.stores.checkpoints import CheckpointStore


def open_session_store(spec: str, *, timeout: float | None = None) -> SessionStore:
    """The store `spec` names; a scheme raf does not know is an error, not a folder.
    `timeout`: seconds the store waits for its server (a connection, a reply) or for a
    lock on its file before it fails; each store's own default when None."""
    spec = spec.strip()
    scheme = spec.split("://", 1)[0].lower() if "://" in spec else ""
    if scheme in ("postgresql", "postgres"):
        from raf.stores.postgres_sessions import PostgresSessionStore

        return (
            PostgresSessionStore(spec)
            if timeout is None
            else PostgresSessionStore(spec, timeout=timeout)
        )
    if scheme in ("redis", "rediss", "unix"):
        from raf.stores.redis_sessions import RedisSessionStore

        return (
            RedisSessionStore(spec) if timeout is None else RedisSessionStore(spec, timeout=timeout)
        )
    from raf.stores.sessions import (
        InMemorySessionStore,
        JsonDirectorySessionStore,
        SqliteSessionStore,
    )

    if scheme == "sqlite":
        path = Path(spec[len("sqlite://") :])
        return (
            SqliteSessionStore(path)
            if timeout is None
            else SqliteSessionStore(path, timeout=timeout)
        )
    if scheme:
        raise SessionError(
            f"unknown session store {scheme}://…: use postgresql://, redis://, sqlite:///PATH, "
            "a .sqlite file, a folder or memory:"
        )
    if spec == "memory:":
        return InMemorySessionStore()
    if not spec:
        raise SessionError("the session store is empty: name a URL, a file or a folder")
    if Path(spec).suffix in (".sqlite", ".sqlite3", ".db"):
        return (
            SqliteSessionStore(spec)
            if timeout is None
            else SqliteSessionStore(spec, timeout=timeout)
        )
    return JsonDirectorySessionStore(spec)


def open_checkpoint_store(spec: str, *, timeout: float | None = None) -> CheckpointStore:
    """The workflow checkpoint store `spec` names, spelt as a session store is: a
    PostgreSQL URL (table `raf_checkpoints`), `sqlite:///PATH` or a `.sqlite`/`.db` file
    (table `raf_checkpoints`, so a session store's file can hold them too), a folder (one
    JSON file each) or `memory:`. `timeout` as for `open_session_store`."""
    from raf.stores.checkpoints import (
        InMemoryCheckpointStore,
        JsonFileCheckpointStore,
        SqliteCheckpointStore,
    )

    spec = spec.strip()
    scheme = spec.split("://", 1)[0].lower() if "://" in spec else ""
    if scheme in ("postgresql", "postgres"):
        from raf.stores.postgres_checkpoints import PostgresCheckpointStore

        return (
            PostgresCheckpointStore(spec)
            if timeout is None
            else PostgresCheckpointStore(spec, timeout=timeout)
        )
    if scheme in ("redis", "rediss", "unix"):
        raise CheckpointError(
            "workflow checkpoints cannot be kept in Redis: name a PostgreSQL URL, a SQLite "
            "file every worker reaches, or a folder"
        )
    if scheme == "sqlite":
        path = Path(spec[len("sqlite://") :])
        return (
            SqliteCheckpointStore(path)
            if timeout is None
            else SqliteCheckpointStore(path, timeout=timeout)
        )
    if scheme:
        raise CheckpointError(
            f"unknown checkpoint store {scheme}://…: use postgresql://, sqlite:///PATH, "
            "a .sqlite file, a folder or memory:"
        )
    if spec == "memory:":
        return InMemoryCheckpointStore()
    if not spec:
        raise CheckpointError("the checkpoint store is empty: name a URL, a file or a folder")
    if Path(spec).suffix in (".sqlite", ".sqlite3", ".db"):
        return (
            SqliteCheckpointStore(spec)
            if timeout is None
            else SqliteCheckpointStore(spec, timeout=timeout)
        )
    return JsonFileCheckpointStore(spec)
