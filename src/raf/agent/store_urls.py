"""`open_session_store` under the name it had before it moved to `raf.stores.urls`
(its home, below the agent layer)."""

from raf.stores.urls import open_session_store

__all__ = ["open_session_store"]
