"""CompressionProvider: everything accumulated before it (the session's history and what
the providers before it injected) compressed to the budget and put in its place; plus a
`compact` tool the model may call."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from raf.context.compression.budget import (
    DEFAULT_BUDGET,
    CompressionSettingError,
    budget_for_model,
    check_count,
    input_budget,
)
from raf.context.compression.injected import InjectedMessages, WatchedProvider
from raf.context.compression.strategies import AnyCompressionStrategy, apply_strategy
from raf.core.contents import TextContent
from raf.core.context import (
    BaseContextProvider,
    ContextProvider,
    ContextResult,
    injected_so_far,
)
from raf.core.errors import ToolExecutionError
from raf.core.function_tool import FunctionTool
from raf.core.messages import ChatMessage, Role
from raf.core.options import AgentRunOptions
from raf.core.sessions import AgentSession
from raf.core.tokens import TokenCounter, count_messages_tokens, default_counter
from raf.core.tools import Tool, ToolContext

log = logging.getLogger("raf.context.compression")


class CompressionProvider(BaseContextProvider):
    """Context provider of kind `compression`; register it last.

    Before each run it compresses the session's history, and the messages the providers
    before it injected in the run, with `strategy` so that they plus the request fit the
    budget, and returns them with `replace_messages=True`. The budget
    is given, or comes from `model_info` (context window − max output − margin), or from
    the run's model id through `raf.clients.models` when that is available.

    Pinned messages of the history are kept word for word and counted first; `pinned`
    facts (the agent's own, the same in every session) go first as one more pinned
    message.
    """

    kind = "compression"

    def __init__(
        self,
        strategy: AnyCompressionStrategy,
        budget: int | None = None,
        *,
        counter: TokenCounter | None = None,
        model_info: Any = None,
        name: str = "compression",
        margin: int | None = None,
        compact_tool: bool = True,
        pinned: Sequence[str] = (),
    ) -> None:
        if budget is None and model_info is not None:
            budget = input_budget(model_info, margin=margin)
        if budget is not None:
            budget = check_count("budget", budget, minimum=1)
        self.strategy = strategy
        self.budget = budget
        self.counter = counter if counter is not None else default_counter()
        self.name = name
        self.compact_tool = compact_tool
        self.pinned = check_facts(pinned)
        """Facts put first in every compressed history, word for word."""
        self._injected = InjectedMessages()

    def watch(self, provider: ContextProvider) -> ContextProvider:
        """`provider`, wrapped so the messages it injects are recorded for this provider.

        Not needed in an agent's run, where compression sees what every provider before
        it injected; it matters only when `on_invoking` is called outside one."""
        if provider.kind == "history" or isinstance(provider, CompressionProvider):
            return provider
        return WatchedProvider(provider, self._injected)

    def resolve_budget(self, agent: Any, options: AgentRunOptions) -> int:
        if self.budget is not None:
            return self.budget
        model_id = None
        if options.chat_options is not None:
            model_id = options.chat_options.model_id
        if model_id is None and agent is not None:
            defaults = getattr(agent, "default_options", None)
            model_id = getattr(defaults, "model_id", None)
        if model_id is None and agent is not None:
            leaf = getattr(agent, "leaf_client", None)
            found_model = getattr(leaf, "model", None)
            model_id = found_model if isinstance(found_model, str) else None
        found = budget_for_model(model_id)
        if found is not None:
            return found
        log.warning(
            "compression provider %r: no budget and no model metadata; using %d tokens",
            self.name,
            DEFAULT_BUDGET,
        )
        return DEFAULT_BUDGET

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        budget = self.resolve_budget(agent, options)
        facts = [pinned_facts_message(self.pinned)] if self.pinned else []
        history = [*facts, *session.messages, *self._earlier(session, options)]
        request_tokens = count_messages_tokens(messages, self.counter)
        history_budget = max(0, budget - request_tokens)
        before = count_messages_tokens(history, self.counter)
        compressed = await apply_strategy(self.strategy, history, history_budget, self.counter)
        after = count_messages_tokens(compressed, self.counter)
        state = dict(session.get_provider_state(self.name) or {})
        state["last"] = {
            "budget": history_budget,
            "tokens_before": before,
            "tokens_after": after,
            "messages_before": len(history),
            "messages_after": len(compressed),
        }
        if after < before:
            state["compressions"] = int(state.get("compressions", 0)) + 1
        session.set_provider_state(self.name, state)
        tools: list[Tool] = [self._compact_tool(budget)] if self.compact_tool else []
        return ContextResult(messages=compressed, replace_messages=True, tools=tools)

    def _earlier(self, session: AgentSession, options: AgentRunOptions) -> list[ChatMessage]:
        """What providers before this one injected in the run: in an agent's run, every
        such provider's messages (the history's are the session's, already taken);
        called outside one, what the watched providers recorded."""
        recorded = self._injected.take(session, options)
        parts = injected_so_far()
        if parts is None:
            return recorded
        return [
            message
            for part in parts
            if part.kind not in ("history", "compression")
            for message in part.messages
        ]

    async def compact(self, session: AgentSession, budget: int | None = None) -> str:
        """Compress the stored history now, to half its size or the budget, whichever is
        smaller; the compressed history replaces the session's messages."""
        history = list(session.messages)
        tokens = count_messages_tokens(history, self.counter)
        limit = budget if budget is not None else (self.budget or DEFAULT_BUDGET)
        target = max(1, min(limit, tokens // 2))
        compressed = await apply_strategy(self.strategy, history, target, self.counter)
        after = count_messages_tokens(compressed, self.counter)
        if after >= tokens:
            return (
                f"nothing to compact: the history holds {len(history)} messages ({tokens} tokens)"
            )
        session.messages[:] = compressed
        return (
            f"compacted the history from {len(history)} messages ({tokens} tokens) to "
            f"{len(compressed)} messages ({after} tokens)"
        )

    def _compact_tool(self, budget: int) -> Tool:
        async def compact(context: ToolContext) -> str:
            """Compact the conversation history now to free context space (older turns are
            summarised or shortened). Use it when the conversation has grown long or before
            starting a new phase of work."""
            if context.session is None:
                raise ToolExecutionError("compact needs the session of a run")
            return await self.compact(context.session, budget)

        return FunctionTool(compact, name="compact", kind="compression", run_in_thread=False)

    def __repr__(self) -> str:
        return f"CompressionProvider({self.strategy!r}, budget={self.budget})"


PINNED_AUTHOR = "raf-pinned"
"""`author_name` of the message that carries a compression provider's pinned facts."""
PINNED_HEADER = "[Facts to keep in mind throughout]"


def check_facts(facts: Sequence[str]) -> list[str]:
    """`facts` as a list, each non-empty text, else CompressionSettingError."""
    if isinstance(facts, str):
        raise CompressionSettingError("pinned must be a list of facts, not one string")
    out = list(facts)
    for index, fact in enumerate(out):
        if not isinstance(fact, str) or not fact.strip():
            raise CompressionSettingError(f"pinned[{index}] must be non-empty text, not {fact!r}")
    return out


def pinned_facts_message(facts: Sequence[str]) -> ChatMessage:
    """One pinned user message listing `facts`, each word for word."""
    text = "\n".join([PINNED_HEADER, *(f"- {fact}" for fact in facts)])
    return ChatMessage(
        role=Role.USER, contents=[TextContent(text=text)], author_name=PINNED_AUTHOR, pinned=True
    )
