"""The one shape of everything that runs like an agent: an `Agent`, an orchestration or a
workflow used as an agent (`.as_agent()`), and what the servers host. Code that only runs
agents (a workflow node, a tool, a server) asks for this, not for a concrete class."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Coroutine, Sequence
from typing import Any, Protocol, TypeVar, runtime_checkable

from raf.core.context import ContextProvider
from raf.core.errors import RafError
from raf.core.messages import MessageInput
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse, AgentResponseUpdate
from raf.core.sessions import AgentSession, SessionStore
from raf.core.tools import Tool

T = TypeVar("T")


@runtime_checkable
class AgentLike(Protocol):
    """A name, a description, sessions, and a run in two faces (whole or streamed)."""

    @property
    def name(self) -> str: ...

    @property
    def description(self) -> str: ...

    def create_session(self, session_id: str | None = None) -> AgentSession:
        """A new session for this agent's conversations."""

    async def run(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AgentResponse:
        """One turn on `session` (a new one when None); the session holds the result."""

    def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]:
        """The same turn, its updates as they come; the last one says how it finished."""


@runtime_checkable
class EquippedAgent(AgentLike, Protocol):
    """An agent-like whose model is offered its own tools and context providers (an
    `Agent`). Servers and the CLI list and close these; an orchestration or a workflow run
    as an agent has none of its own (its members do), and is not one."""

    @property
    def tools(self) -> Sequence[Tool]: ...

    @property
    def context_providers(self) -> Sequence[ContextProvider]: ...


def own_tools(agent: AgentLike) -> Sequence[Tool]:
    """The tools an agent offers its model itself; none for one without a model."""
    return agent.tools if isinstance(agent, EquippedAgent) else ()


def own_providers(agent: AgentLike) -> Sequence[ContextProvider]:
    """The context providers of an agent's own runs; none for one without a model."""
    return agent.context_providers if isinstance(agent, EquippedAgent) else ()


@runtime_checkable
class ClosableAgent(AgentLike, Protocol):
    """An agent-like that holds connections or background work to close when done."""

    async def aclose(self) -> None: ...


async def close_agent_like(agent: AgentLike) -> None:
    """Close what the agent holds open, where it holds anything (an `aclose`)."""
    if isinstance(agent, ClosableAgent):
        await agent.aclose()


def run_outside_a_loop(start: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """`run_sync` of an agent-like: `asyncio.run(start())` for scripts; inside a running
    event loop a `RafError` that says to await `run()` (the coroutine is never made)."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(start())
    raise RafError("run_sync() cannot be used inside a running event loop; await run()")


async def load_saved_session(
    store: SessionStore | None, agent: str, session_id: str
) -> AgentSession:
    """`load_session` of an agent-like: the session `store` saved, or a `RafError` naming
    `agent` when it has no store to load from."""
    if store is None:
        raise RafError(f"agent {agent!r} has no session store to load from")
    return await store.load(session_id)
