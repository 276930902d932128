"""The history provider every agent has first: the session's transcript in, new turns out."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raf.core.context import ContextResult
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession


class InMemoryHistoryProvider:
    """Injects the session's messages before a run and stores the new ones after it.

    On an error nothing is stored, so a failed run leaves the transcript as it was; the
    one exception is a run that failed with a response beside the error (the rounds
    whose tools ran before the model call failed), which is stored as the turn.
    """

    kind = "history"

    def __init__(self, name: str = "history") -> None:
        self.name = name

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        # not copied: the agent joins every provider's messages into one new list
        return ContextResult(messages=session.messages)

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        if response is None:
            return
        session.messages.extend(request_messages)
        session.messages.extend(response.messages)

    def __repr__(self) -> str:
        return f"InMemoryHistoryProvider({self.name!r})"
