"""The one seam around runs, model calls and tool calls: agent, chat and function middleware.

Each middleware is `async def mw(context, call_next) -> None`. Before `await call_next()`
it may read or change the context (messages, options, arguments); after it, the result is
on `context.result`, which it may read or replace. Not calling `call_next` short-circuits
(set `context.result` first); raising ends the run with that error.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar, get_type_hints

from raf.core.errors import ConfigurationError, RafError
from raf.core.registry import NamedRegistry

if TYPE_CHECKING:
    from raf.core.contents import FunctionCallContent
    from raf.core.messages import ChatMessage
    from raf.core.options import AgentRunOptions, ChatOptions
    from raf.core.responses import AgentResponse, ChatResponse
    from raf.core.run_context import RunContext
    from raf.core.sessions import AgentSession
    from raf.core.tools import Tool, ToolResult

C = TypeVar("C")
MiddlewareKind = Literal["agent", "chat", "function"]
CallNext = Callable[[], Awaitable[None]]
"""Runs the rest of the chain (the next middleware, or the work itself)."""


@dataclass(kw_only=True, slots=True)
class AgentRunContext:
    """One agent run as agent middleware sees it; `result` is set once the run is done."""

    run: RunContext
    messages: list[ChatMessage]
    """The request's new messages (before context providers add theirs)."""
    options: AgentRunOptions
    stream: bool = False
    result: AgentResponse | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    """Scratch space shared by the middleware of this run."""

    @property
    def agent(self) -> Any:
        return self.run.agent

    @property
    def agent_name(self) -> str:
        return self.run.agent_name

    @property
    def session(self) -> AgentSession | None:
        return self.run.session


@dataclass(kw_only=True, slots=True)
class ChatContext:
    """One model call; change `messages` or `options` before `call_next`, read `result` after.

    When streaming, the updates reach the caller while `call_next` runs; `result` is the
    folded response. A middleware that short-circuits sets `result`, and its messages are
    streamed as whole updates.
    """

    run: RunContext
    messages: list[ChatMessage]
    options: ChatOptions
    stream: bool = False
    result: ChatResponse | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def agent_name(self) -> str:
        return self.run.agent_name

    @property
    def model_id(self) -> str | None:
        """The model asked for, or the one that answered once `result` is in."""
        if self.result is not None and self.result.model_id:
            return self.result.model_id
        return self.options.model_id


@dataclass(kw_only=True, slots=True)
class FunctionInvocationContext:
    """One tool call; change `arguments` before `call_next`, read or set `result`.

    `tool` is None when the model named a tool that does not exist (the result then says
    so). Errors of the tool itself arrive as `result.error`, not as exceptions.
    """

    run: RunContext
    call: FunctionCallContent
    tool: Tool | None
    arguments: dict[str, Any]
    result: ToolResult | None = None
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def agent_name(self) -> str:
        return self.run.agent_name

    @property
    def tool_name(self) -> str:
        return self.call.name

    @property
    def call_id(self) -> str:
        return self.call.call_id


class AgentMiddleware(Protocol):
    """Wraps a whole agent run."""

    async def __call__(self, context: AgentRunContext, call_next: CallNext) -> None: ...


class ChatMiddleware(Protocol):
    """Wraps every model call of a run."""

    async def __call__(self, context: ChatContext, call_next: CallNext) -> None: ...


class FunctionMiddleware(Protocol):
    """Wraps every tool call of a run."""

    async def __call__(self, context: FunctionInvocationContext, call_next: CallNext) -> None: ...


Middleware = AgentMiddleware | ChatMiddleware | FunctionMiddleware | Callable[..., Any]
"""Any of the three kinds; its kind comes from a decorator or its context annotation."""

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

    agent: tuple[AgentMiddleware, ...] = ()
    chat: tuple[ChatMiddleware, ...] = ()
    function: tuple[FunctionMiddleware, ...] = ()

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

    async def step(index: int) -> None:
        if index == len(chain):
            await final(context)
            return
        called = False

        async def call_next() -> None:
            nonlocal called
            if called:
                raise RafError(f"middleware {chain[index]!r} called call_next twice")
            called = True
            await step(index + 1)

        await chain[index](context, call_next)

    await step(0)


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


_DONE = object()


async def stream_through(
    drive: Callable[[Callable[[Any], None]], Awaitable[None]],
) -> AsyncIterator[Any]:
    """Run `drive(emit)` in a task and yield what it emits as it comes; when it is done,
    its error (if any) is raised here. Used to stream through a middleware chain."""
    queue: asyncio.Queue[Any] = asyncio.Queue()

    failure: list[BaseException] = []

    async def runner() -> None:
        try:
            await drive(queue.put_nowait)
        except asyncio.CancelledError:
            raise
        except BaseException as exc:  # KeyboardInterrupt too: raised where it is awaited
            failure.append(exc)
        finally:
            queue.put_nowait(_DONE)

    task = asyncio.ensure_future(runner())
    try:
        while True:
            item = await queue.get()
            if item is _DONE:
                break
            yield item
        await task
        if failure:
            raise failure[0]
    finally:
        if not task.done():
            task.cancel()
            with contextlib.suppress(BaseException):
                await task
