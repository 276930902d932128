"""Context providers: hooks that run before and after every model call of an agent."""

from __future__ import annotations

from collections.abc import Sequence
from contextvars import ContextVar
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


@dataclass(frozen=True, slots=True)
class InjectedPart:
    """Messages one provider injected into the run in progress."""

    provider: str
    kind: str
    messages: Sequence[ChatMessage]


_INJECTED: ContextVar[tuple[InjectedPart, ...] | None] = ContextVar(
    "raf_injected_so_far", default=None
)


def injected_so_far() -> tuple[InjectedPart, ...] | None:
    """Inside a provider's `on_invoking` during an agent's run: what the providers before
    it injected in this run, in order (from the last one that replaced the messages on);
    None when called outside an agent's run. A provider that replaces the messages (as
    compression does) reads it to keep what it would otherwise drop."""
    return _INJECTED.get()


class injecting:  # lower-case: it reads as a function, `with injecting(parts):`
    """The run loop's side of `injected_so_far`: `parts` is what it returns meanwhile.
    (A class, not a generator context manager: it is entered once per provider per run.)"""

    __slots__ = ("_parts", "_token")

    def __init__(self, parts: Sequence[InjectedPart]) -> None:
        self._parts = parts

    def __enter__(self) -> None:
        self._token = _INJECTED.set(tuple(self._parts))

    def __exit__(self, *exc: object) -> None:
        _INJECTED.reset(self._token)


@runtime_checkable
class ContextProvider(Protocol):
    """Two hooks plus a name and a kind."""

    @property
    def name(self) -> str: ...

    @property
    def kind(self) -> str:
        """memory | skills | mcp | workspace | knowledge | wiki | history | compression | …"""

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


class _LenientProvider:
    """A provider written with only `on_invoking`, given the seed's defaults: its class
    name as name, kind "unknown", and an `on_invoked` that does nothing."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.name = str(getattr(inner, "name", None) or type(inner).__name__)
        self.kind = str(getattr(inner, "kind", None) or "unknown")

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        result: ContextResult = await self.inner.on_invoking(agent, session, messages, options)
        return result

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        hook = getattr(self.inner, "on_invoked", None)
        if hook is not None:
            await hook(agent, session, request_messages, response, error)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def __repr__(self) -> str:
        return repr(self.inner)


_CHECKED_PROVIDER_TYPES: set[type] = set()


def as_context_provider(value: object) -> ContextProvider:
    """`value` as a ContextProvider: a full one as it is, one with just `on_invoking`
    completed with defaults; anything else is a clear error."""
    kind = type(value)
    if kind in _CHECKED_PROVIDER_TYPES:
        return value  # type: ignore[return-value]
    if isinstance(value, ContextProvider):
        _CHECKED_PROVIDER_TYPES.add(kind)
        return value
    if callable(getattr(value, "on_invoking", None)):
        return _LenientProvider(value)
    from raf.core.errors import ProviderError

    raise ProviderError(
        f"{value!r} is not a ContextProvider: it needs an async "
        "on_invoking(agent, session, messages, options) returning a ContextResult "
        "(and usually name, kind and on_invoked)"
    )
