"""Context providers: hooks that run before and after every model call of an agent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession
from raf.core.tools import Tool


@dataclass(kw_only=True, slots=True)
class ContextResult:
    """What a provider adds to a run before the model is called."""

    instructions: str | None = None
    """Appended to the system prompt; joined with newlines across providers."""
    messages: list[ChatMessage] = field(default_factory=list)
    """Injected before the request messages."""
    tools: list[Tool] = field(default_factory=list)
    """Tools for this run only, merged with the agent's own."""
    replace_messages: bool = False
    """When true, `messages` replace everything earlier providers accumulated."""


@runtime_checkable
class ContextProvider(Protocol):
    """Two hooks plus a name and a kind."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str:
        """memory | skills | mcp | workspace | knowledge | wiki | history | compression | …"""
        ...

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult: ...

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None: ...


class BaseContextProvider:
    """A provider that adds nothing; subclass and override the hooks you need."""

    name: str = "provider"
    kind: str = "unknown"

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        return ContextResult()

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        return None

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self.name!r} kind={self.kind!r}>"
