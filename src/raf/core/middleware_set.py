"""The plumbing of the middleware seam: telling a middleware's kind, the ordered set of a
run's middleware by kind, running a chain, streaming through one, and the registry by name.

It knows nothing of the contexts a middleware receives (`raf.core.middleware` defines
them), so the run's context can hold its `MiddlewareSet` while the contexts hold the run.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Literal, TypeVar, get_type_hints

from raf.core.errors import ConfigurationError, RafError
from raf.core.hand_out import Drive, hand_out, handed_out
from raf.core.registry import NamedRegistry

C = TypeVar("C")
MiddlewareKind = Literal["agent", "chat", "function"]
CallNext = Callable[[], Awaitable[None]]
"""Runs the rest of the chain (the next middleware, or the work itself)."""
AnyMiddleware = Callable[[Any, CallNext], Awaitable[None]]
"""One middleware of any kind, as the set keeps it (its context type is the kind's)."""

_KIND_ATTRIBUTE = "__raf_middleware_kind__"
_LOCAL_ATTRIBUTE = "__raf_middleware_local__"
_CONTEXT_KINDS: dict[str, MiddlewareKind] = {
    "AgentRunContext": "agent",
    "ChatContext": "chat",
    "FunctionInvocationContext": "function",
}


def _mark(kind: MiddlewareKind) -> Callable[[Any], Any]:
    def mark(fn: Any) -> Any:
        setattr(fn, _KIND_ATTRIBUTE, kind)
        return fn

    return mark


agent_middleware = _mark("agent")
"""Decorator: this function is agent-run middleware."""
chat_middleware = _mark("chat")
"""Decorator: this function is chat middleware."""
function_middleware = _mark("function")
"""Decorator: this function is function (tool-call) middleware."""


def local_middleware(middleware: Any) -> Any:
    """Mark middleware as the agent's own: sub-agents (agents used as its tools) do not
    inherit it, as they inherit other middleware (an agent's guardrails are its own)."""
    setattr(middleware, _LOCAL_ATTRIBUTE, True)
    return middleware


def middleware_kind(middleware: Any) -> MiddlewareKind:
    """Which kind a middleware is: a decorator's mark, a `kind` attribute, or the type of
    its first parameter; a clear error when none says."""
    marked = getattr(middleware, _KIND_ATTRIBUTE, None) or getattr(
        middleware, "middleware_kind", None
    )
    if marked in ("agent", "chat", "function"):
        return marked  # type: ignore[no-any-return]
    if not callable(middleware):
        raise ConfigurationError(
            f"middleware {middleware!r} is not callable: it must be "
            "`async (context, call_next) -> None`"
        )
    target = middleware if inspect.isfunction(middleware) else type(middleware).__call__
    try:
        params = list(inspect.signature(middleware).parameters.values())
    except (TypeError, ValueError):
        params = []
    try:
        hints = get_type_hints(target)
    except (NameError, TypeError, ValueError):
        hints = {}
    if params:
        hint: Any = hints.get(params[0].name, params[0].annotation)
        # an annotation that cannot be resolved (a name imported inside a function)
        # stays a string: its last dotted part still says the kind
        name = hint.rsplit(".", 1)[-1] if isinstance(hint, str) else getattr(hint, "__name__", None)
        if name in _CONTEXT_KINDS:
            return _CONTEXT_KINDS[name]
    raise ConfigurationError(
        f"cannot tell which kind of middleware {middleware!r} is: annotate its first "
        "parameter as AgentRunContext, ChatContext or FunctionInvocationContext, or mark it "
        "with @agent_middleware, @chat_middleware or @function_middleware"
    )


@dataclass(kw_only=True, slots=True, frozen=True)
class MiddlewareSet:
    """The middleware of a run, by kind, outermost first."""

    agent: tuple[AnyMiddleware, ...] = ()
    """Agent middleware (each takes an `AgentRunContext`)."""
    chat: tuple[AnyMiddleware, ...] = ()
    """Chat middleware (each takes a `ChatContext`)."""
    function: tuple[AnyMiddleware, ...] = ()
    """Function middleware (each takes a `FunctionInvocationContext`)."""

    @classmethod
    def of(cls, items: Sequence[Any]) -> MiddlewareSet:
        """Sort middleware into the three kinds, keeping their order."""
        agent: list[Any] = []
        chat: list[Any] = []
        function: list[Any] = []
        lists = {"agent": agent, "chat": chat, "function": function}
        for item in items:
            lists[middleware_kind(item)].append(item)
        return cls(agent=tuple(agent), chat=tuple(chat), function=tuple(function))

    def __add__(self, other: MiddlewareSet) -> MiddlewareSet:
        if not other:
            return self
        if not self:
            return other
        return MiddlewareSet(
            agent=self.agent + other.agent,
            chat=self.chat + other.chat,
            function=self.function + other.function,
        )

    def joined(self, other: MiddlewareSet) -> MiddlewareSet:
        """These, then those of `other` not already here (each middleware runs once)."""

        def new(mine: tuple[Any, ...], theirs: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(m for m in theirs if all(m is not x for x in mine))

        return self + MiddlewareSet(
            agent=new(self.agent, other.agent),
            chat=new(self.chat, other.chat),
            function=new(self.function, other.function),
        )

    def __bool__(self) -> bool:
        return bool(self.agent or self.chat or self.function)

    def inherited(self) -> MiddlewareSet:
        """What a sub-agent inherits: all but the middleware marked `local_middleware`."""

        def keep(items: tuple[Any, ...]) -> tuple[Any, ...]:
            return tuple(m for m in items if not getattr(m, _LOCAL_ATTRIBUTE, False))

        return MiddlewareSet(
            agent=keep(self.agent), chat=keep(self.chat), function=keep(self.function)
        )

    def all(self) -> list[Any]:
        return [*self.agent, *self.chat, *self.function]


NO_MIDDLEWARE = MiddlewareSet()


async def run_chain(
    chain: Sequence[Callable[[C, CallNext], Awaitable[None]]],
    context: C,
    final: Callable[[C], Awaitable[None]],
) -> None:
    """Run `final` inside the chain of middleware, outermost first."""
    if chain:
        await chain[0](context, _CallNext(chain, context, final, 1))
    else:
        await final(context)


class _CallNext:
    """The `call_next` handed to the middleware before `index`: runs the rest of the
    chain, once. (An object, not a closure over itself: a run's chain leaves no cycle
    behind for the garbage collector.)"""

    __slots__ = ("called", "chain", "context", "final", "index")

    def __init__(
        self,
        chain: Sequence[Any],
        context: Any,
        final: Callable[[Any], Awaitable[None]],
        index: int,
    ) -> None:
        self.chain: Sequence[Callable[[Any, CallNext], Awaitable[None]]] = chain
        self.context = context
        self.final: Callable[[Any], Awaitable[None]] = final
        self.index = index
        self.called = False

    def __call__(self) -> Awaitable[None]:
        if self.called:
            raise RafError(f"middleware {self.chain[self.index - 1]!r} called call_next twice")
        self.called = True
        index, chain = self.index, self.chain
        if index == len(chain):
            return self.final(self.context)
        following = _CallNext(chain, self.context, self.final, index + 1)
        awaited: Awaitable[None] = chain[index](self.context, following)
        return awaited


_AT_WORK = object()
"""What the innermost `call_next` of a chain run `Around` hands out: the work is due."""


async def _work_elsewhere(context: object) -> None:
    await hand_out(_AT_WORK)


class Around(Generic[C]):
    """A middleware chain around work that its caller does itself, in the caller's task.

    `enter()` runs the chain down to its innermost `call_next` and suspends it there
    (False: a middleware answered without calling it); the caller then does the work and
    puts its result on the context; `leave(error)` resumes the chain as if `call_next`
    had returned (or raised `error`) and runs it to its end, raising what the chain
    raises. The middleware sees what it would see with the work inside it (its context
    variables, a cancellation, the work's error at `call_next`), while the work runs
    with no chain frame above it: what it hands out or awaits does not pass through the
    chain, so a chain costs the same however much the work streams.
    """

    __slots__ = ("_chain",)

    def __init__(self, chain: Sequence[Callable[[C, CallNext], Awaitable[None]]], context: C):
        self._chain = run_chain(chain, context, _work_elsewhere)

    async def enter(self) -> bool:
        """Run the chain to its innermost `call_next`: whether the work is due."""
        handed = await Drive(self._chain, None)
        if handed is None:
            return False
        if handed.value is not _AT_WORK:
            self._chain.close()
            raise RafError("a middleware handed a value out of its chain: not supported")
        return True

    async def leave(self, error: BaseException | None = None) -> None:
        """Resume the chain with the work done (or its `error` raised at `call_next`)."""
        if await Drive(self._chain, error) is not None:
            self._chain.close()
            raise RafError("a middleware handed a value out of its chain: not supported")


_REGISTRY: NamedRegistry[Any] = NamedRegistry(
    "middleware", "raf.register_middleware(name, middleware)"
)


def register_middleware(name: str, middleware: Any) -> None:
    """Make a middleware available by name (the `middleware:` list of an agent document)."""
    middleware_kind(middleware)  # refuse what could never run, at registration
    _REGISTRY.add(name, middleware)


def registered_middleware() -> dict[str, Any]:
    """The middleware registered by name, as a copy."""
    return _REGISTRY.copy()


def find_middleware(name: str) -> Any:
    """The middleware registered as `name`; a KeyError that suggests near names."""
    return _REGISTRY.find(name)


async def stream_through(
    drive: Callable[[Callable[[Any], Awaitable[None]]], Coroutine[Any, Any, None]],
) -> AsyncIterator[Any]:
    """Run `drive(emit)` in this task and yield each item it passes to `await emit(item)`
    as it comes; its error, if any, is raised here. Used to stream through a middleware
    chain: no task and no queue stand between the chain and the caller."""
    async with contextlib.aclosing(handed_out(drive(hand_out))) as items:
        async for item in items:
            yield item
