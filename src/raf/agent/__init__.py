"""The agent layer: Agent, AgentBuilder and the history provider.

The session stores (their home is `raf.stores`) are offered here too and load on first
use: they bring sqlite3 and file handling, which an agent with no store never needs.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from raf.agent.agent import Agent
from raf.agent.builder import AgentBuilder
from raf.agent.history import InMemoryHistoryProvider

if TYPE_CHECKING:
    from raf.stores.sessions import (
        InMemorySessionStore,
        JsonDirectorySessionStore,
        SqliteSessionStore,
    )

_LAZY = {"InMemorySessionStore", "JsonDirectorySessionStore", "SqliteSessionStore"}

__all__ = [
    "Agent",
    "AgentBuilder",
    "InMemoryHistoryProvider",
    "InMemorySessionStore",
    "JsonDirectorySessionStore",
    "SqliteSessionStore",
]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module("raf.stores.sessions"), name)
    raise AttributeError(f"module 'raf.agent' has no attribute {name!r}")
