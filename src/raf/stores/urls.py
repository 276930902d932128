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


def _named(spec: str) -> tuple[str, str]:
    """What `spec` names, one spelling for both kinds of store: (`postgres`, the URL),
    (`redis`, the URL), (`sqlite`, the file), (`memory`, ""), (`folder`, the path),
    (`empty`, "") or (`unknown`, the scheme)."""
    spec = spec.strip()
    scheme = spec.split("://", 1)[0].lower() if "://" in spec else ""
    if scheme in ("postgresql", "postgres"):
        return "postgres", spec
    if scheme in ("redis", "rediss", "unix"):
        return "redis", spec
    if scheme == "sqlite":
        return "sqlite", spec[len("sqlite://") :]
    if scheme:
        return "unknown", scheme
    if spec == "memory:":
        return "memory", ""
    if not spec:
        return "empty", ""
    if Path(spec).suffix in (".sqlite", ".sqlite3", ".db"):
        return "sqlite", spec
    return "folder", spec


def open_session_store(spec: str, *, timeout: float | None = None) -> SessionStore:
    """The store `spec` names; a scheme raf does not know is an error, not a folder.
    `timeout`: seconds the store waits for its server (a connection, a reply) or for a
    lock on its file before it fails; each store's own default when None."""
    kind, where = _named(spec)
    if kind == "postgres":
        from raf.stores.postgres_sessions import PostgresSessionStore

        return (
            PostgresSessionStore(where)
            if timeout is None
            else PostgresSessionStore(where, timeout=timeout)
        )
    if kind == "redis":
        from raf.stores.redis_sessions import RedisSessionStore

        return (
            RedisSessionStore(where)
            if timeout is None
            else RedisSessionStore(where, timeout=timeout)
        )
    from raf.stores.sessions import (
        InMemorySessionStore,
        JsonDirectorySessionStore,
        SqliteSessionStore,
    )

    if kind == "sqlite":
        return (
            SqliteSessionStore(where)
            if timeout is None
            else SqliteSessionStore(where, timeout=timeout)
        )
    if kind == "unknown":
        raise SessionError(
            f"unknown session store {where}://…: use postgresql://, redis://, sqlite:///PATH, "
            "a .sqlite file, a folder or memory:"
        )
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "empty":
        raise SessionError("the session store is empty: name a URL, a file or a folder")
    return JsonDirectorySessionStore(where)


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

    kind, where = _named(spec)
    if kind == "postgres":
        from raf.stores.postgres_checkpoints import PostgresCheckpointStore

        return (
            PostgresCheckpointStore(where)
            if timeout is None
            else PostgresCheckpointStore(where, timeout=timeout)
        )
    if kind == "redis":
        raise CheckpointError(
            "workflow checkpoints cannot be kept in Redis: name a PostgreSQL URL, a SQLite "
            "file every worker reaches, or a folder"
        )
    if kind == "sqlite":
        return (
            SqliteCheckpointStore(where)
            if timeout is None
            else SqliteCheckpointStore(where, timeout=timeout)
        )
    if kind == "unknown":
        raise CheckpointError(
            f"unknown checkpoint store {where}://…: use postgresql://, sqlite:///PATH, "
            "a .sqlite file, a folder or memory:"
        )
    if kind == "memory":
        return InMemoryCheckpointStore()
    if kind == "empty":
        raise CheckpointError("the checkpoint store is empty: name a URL, a file or a folder")
    return JsonFileCheckpointStore(where)
