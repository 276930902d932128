"""The one shape of everything that runs like an agent: an `Agent`, an orchestration or a
workflow used as an agent (`.as_agent()`), and what the servers host. Code that only runs
agents (a workflow node, a tool, a server) asks for this, not for a concrete class."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Protocol, runtime_checkable

from raf.core.messages import MessageInput
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse, AgentResponseUpdate
from raf.core.sessions import AgentSession


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
