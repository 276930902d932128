"""The PostgreSQL session store under the name it had before it moved to
`raf.stores.postgres_sessions` (its home, below the agent layer)."""

from raf.stores.postgres_sessions import PostgresSessionStore

__all__ = ["PostgresSessionStore"]
