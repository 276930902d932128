"""Small providers and tools shared by the agent tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raf import (
    AgentResponse,
    AgentRunOptions,
    AgentSession,
    ChatMessage,
    ContextResult,
    Tool,
    tool,
)


class RecordingProvider:
    """Returns a fixed ContextResult and records the hook calls in a shared log."""

    def __init__(self, name: str, result: ContextResult, log: list[str], kind: str = "test"):
        self.name = name
        self.kind = kind
        self.result = result
        self.log = log
        self.invoked_with: list[tuple[AgentResponse | None, BaseException | None]] = []

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        self.log.append(f"invoking:{self.name}")
        return self.result

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        self.log.append(f"invoked:{self.name}")
        self.invoked_with.append((response, error))


def make_tool(name: str) -> Tool:
    def fn(text: str = "") -> str:
        return f"{name}:{text}"

    fn.__name__ = name
    fn.__doc__ = f"The {name} tool."
    return tool(fn)
