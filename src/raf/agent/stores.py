"""The file, SQLite and in-memory session stores, under the name they had before they
moved to `raf.stores.sessions` (their home, below the agent layer)."""

from raf.stores.sessions import InMemorySessionStore, JsonDirectorySessionStore, SqliteSessionStore

__all__ = ["InMemorySessionStore", "JsonDirectorySessionStore", "SqliteSessionStore"]
