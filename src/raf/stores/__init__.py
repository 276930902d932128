"""Where sessions and workflow checkpoints are kept: in memory, in files, in SQLite,
and (as extras) in PostgreSQL and Redis, with the PostgreSQL connection pool they share.

This layer sits on `raf.core` alone, below the agent and the workflow engine that use it.
Each store loads on first use: the file and SQLite stores bring sqlite3 and file locking,
PostgreSQL and Redis bring their drivers, which a program with no store never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from raf.stores.checkpoints import (
        Checkpoint,
        CheckpointInfo,
        CheckpointStore,
        InMemoryCheckpointStore,
        JsonFileCheckpointStore,
        SqliteCheckpointStore,
        latest_checkpoint,
    )
    from raf.stores.postgres_checkpoints import PostgresCheckpointStore
    from raf.stores.postgres_sessions import PostgresSessionStore
    from raf.stores.redis_sessions import RedisSessionStore
    from raf.stores.sessions import (
        InMemorySessionStore,
        JsonDirectorySessionStore,
        SqliteSessionStore,
    )
    from raf.stores.urls import open_session_store

_HOME = {
    "InMemorySessionStore": "raf.stores.sessions",
    "JsonDirectorySessionStore": "raf.stores.sessions",
    "SqliteSessionStore": "raf.stores.sessions",
    "PostgresSessionStore": "raf.stores.postgres_sessions",
    "RedisSessionStore": "raf.stores.redis_sessions",
    "open_session_store": "raf.stores.urls",
    "Checkpoint": "raf.stores.checkpoints",
    "CheckpointInfo": "raf.stores.checkpoints",
    "CheckpointStore": "raf.stores.checkpoints",
    "InMemoryCheckpointStore": "raf.stores.checkpoints",
    "JsonFileCheckpointStore": "raf.stores.checkpoints",
    "SqliteCheckpointStore": "raf.stores.checkpoints",
    "latest_checkpoint": "raf.stores.checkpoints",
    "PostgresCheckpointStore": "raf.stores.postgres_checkpoints",
}

__all__ = [
    "Checkpoint",
    "CheckpointInfo",
    "CheckpointStore",
    "InMemoryCheckpointStore",
    "InMemorySessionStore",
    "JsonDirectorySessionStore",
    "JsonFileCheckpointStore",
    "PostgresCheckpointStore",
    "PostgresSessionStore",
    "RedisSessionStore",
    "SqliteCheckpointStore",
    "SqliteSessionStore",
    "latest_checkpoint",
    "open_session_store",
]


def __getattr__(name: str) -> Any:
    if name in _HOME:
        return getattr(importlib.import_module(_HOME[name]), name)
    raise AttributeError(f"module 'raf.stores' has no attribute {name!r}")
