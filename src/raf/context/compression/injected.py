"""What providers that run before compression inject into a run, recorded so compression
compresses everything accumulated before it instead of rebuilding from the session alone."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from raf.core.context import ContextProvider, ContextResult
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession


class InjectedMessages:
    """The messages providers injected into the current run of each session."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, int], list[ChatMessage]] = {}

    def record(self, session: AgentSession, options: object, result: ContextResult) -> None:
        key = (session.id, id(options))  # one run: its session and its options object
        if result.replace_messages:
            self._runs[key] = list(result.messages)
        elif result.messages:
            self._runs.setdefault(key, []).extend(result.messages)

    def take(self, session: AgentSession, options: object) -> list[ChatMessage]:
        """The messages recorded for this run (what a failed earlier run of the session
        left is forgotten too)."""
        taken = self._runs.pop((session.id, id(options)), [])
        for key in [k for k in self._runs if k[0] == session.id]:
            del self._runs[key]
        return taken


class WatchedProvider:
    """A provider whose injected messages are recorded for compression; it looks like
    the provider it wraps (attributes and `isinstance` included)."""

    def __init__(self, inner: ContextProvider, sink: InjectedMessages) -> None:
        self._inner = inner
        self._sink = sink

    @property  # type: ignore[misc]
    def __class__(self) -> type[Any]:  # isinstance() sees the wrapped provider's class
        return type(self._inner)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    @property
    def name(self) -> str:
        return self._inner.name

    @property
    def kind(self) -> str:
        return self._inner.kind

    @property
    def wrapped(self) -> ContextProvider:
        """The provider itself."""
        return self._inner

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        result = await self._inner.on_invoking(agent, session, messages, options)
        if isinstance(result, ContextResult):
            self._sink.record(session, options, result)
        return result

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        await self._inner.on_invoked(agent, session, request_messages, response, error)

    def __repr__(self) -> str:
        return repr(self._inner)
