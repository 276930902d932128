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
        if response is not None:
            record_turn(session, request_messages, response)

    def __repr__(self) -> str:
        return f"InMemoryHistoryProvider({self.name!r})"


def record_turn(
    session: AgentSession, request_messages: Sequence[ChatMessage], response: AgentResponse
) -> None:
    """The history's record of a turn: the request, then the response's messages."""
    session.messages.extend(request_messages)
    session.messages.extend(response.messages)


_ON_INVOKING = InMemoryHistoryProvider.on_invoking
_ON_INVOKED = InMemoryHistoryProvider.on_invoked


def is_plain_history(provider: object) -> bool:
    """Whether `provider` is an `InMemoryHistoryProvider` with this module's own hooks:
    not a subclass, no hook replaced on the class or set on the instance (which holds
    only its name). A run may then do the hooks' work itself, with the same result:
    on_invoking injects `session.messages` and nothing else; on_invoked, given a
    response, calls `record_turn`."""
    return (
        type(provider) is InMemoryHistoryProvider
        and len(provider.__dict__) == 1
        and InMemoryHistoryProvider.on_invoking is _ON_INVOKING
        and InMemoryHistoryProvider.on_invoked is _ON_INVOKED
    )
