"""Every session store the contract tests run against, opened from plain strings so that
child processes can open the same one."""

from __future__ import annotations

from raf import (
    InMemorySessionStore,
    JsonDirectorySessionStore,
    PostgresSessionStore,
    RedisSessionStore,
    SessionStore,
    SqliteSessionStore,
)

KINDS = ["memory", "json", "sqlite", "postgres", "redis"]
SHARED_KINDS = [k for k in KINDS if k != "memory"]
"""The stores several processes can share."""


def make_store(kind: str, where: str, name: str) -> SessionStore:
    """A handle on the store `kind` at `where` (a folder, a file, a DSN or a URL); `name`
    keeps one test's sessions apart from another's (a table or key prefix)."""
    if kind == "memory":
        return InMemorySessionStore()
    if kind == "json":
        return JsonDirectorySessionStore(where)
    if kind == "sqlite":
        return SqliteSessionStore(where)
    if kind == "postgres":
        return PostgresSessionStore(where, table=name)
    if kind == "redis":
        return RedisSessionStore(where, prefix=name)
    raise ValueError(f"unknown store kind {kind!r}")


async def close_store(store: SessionStore) -> None:
    """Close a store's connections where it has any."""
    close = getattr(store, "close", None)
    if close is not None:
        await close()
