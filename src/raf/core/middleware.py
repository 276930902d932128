"""The one seam around runs, model calls and tool calls: agent, chat and function middleware.

Each middleware is `async def mw(context, call_next) -> None`. Before `await call_next()`
it may read or change the context (messages, options, arguments); after it, the result is
on `context.result`, which it may read or replace. Not calling `call_next` short-circuits
(set `context.result` first); raising ends the run with that error.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from raf.core.middleware_set import (
    NO_MIDDLEWARE,
    Around,
    CallNext,
    MiddlewareKind,
    MiddlewareSet,
    agent_middleware,
    chat_middleware,
    find_middleware,
    function_middleware,
    local_middleware,
    middleware_kind,
    register_middleware,
    registered_middleware,
    run_chain,
    stream_through,
)

if TYPE_CHECKING:
    from raf.core.contents import FunctionCallContent
    from raf.core.messages import ChatMessage
    from raf.core.options import AgentRunOptions, ChatOptions
    from raf.core.responses import AgentResponse, ChatResponse
    from raf.core.run_context import RunContext
    from raf.core.sessions import AgentSession
    from raf.core.tools import Tool, ToolResult

__all__ = [  # the plumbing is imported from here too
    "NO_MIDDLEWARE",
    "AgentMiddleware",
    "AgentRunContext",
    "Around",
    "CallNext",
    "ChatContext",
    "ChatMiddleware",
    "FunctionInvocationContext",
    "FunctionMiddleware",
    "Middleware",
    "MiddlewareKind",
    "MiddlewareSet",
    "agent_middleware",
    "chat_middleware",
    "find_middleware",
    "function_middleware",
    "local_middleware",
    "middleware_kind",
    "register_middleware",
    "registered_middleware",
    "run_chain",
    "stream_through",
]


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
