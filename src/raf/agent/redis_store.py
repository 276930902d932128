"""The Redis session store under the name it had before it moved to
`raf.stores.redis_sessions` (its home, below the agent layer)."""

from raf.stores.redis_sessions import RedisSessionStore

__all__ = ["RedisSessionStore"]
