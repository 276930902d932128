"""The agent layer: Agent, AgentBuilder, the history provider and session stores."""

from raf.agent.agent import Agent
from raf.agent.builder import AgentBuilder
from raf.agent.history import InMemoryHistoryProvider
from raf.agent.stores import InMemorySessionStore, JsonDirectorySessionStore, SqliteSessionStore

__all__ = [
    "Agent",
    "AgentBuilder",
    "InMemoryHistoryProvider",
    "InMemorySessionStore",
    "JsonDirectorySessionStore",
    "SqliteSessionStore",
]
