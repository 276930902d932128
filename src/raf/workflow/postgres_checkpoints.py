"""The PostgreSQL checkpoint store under the name it had before it moved to
`raf.stores.postgres_checkpoints` (its home, below the workflow layer)."""

from raf.stores.postgres_checkpoints import PostgresCheckpointStore

__all__ = ["PostgresCheckpointStore"]
