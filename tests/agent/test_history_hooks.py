"""The history provider's hooks: a plain `InMemoryHistoryProvider` keeps the transcript
(a run may do its hooks' work itself), and one whose hooks were changed (a subclass, a
hook set on the instance or on the class) is called as any provider is."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from raf import AgentBuilder, AgentResponse, AgentRunOptions, AgentSession, ChatMessage
from raf.agent.history import InMemoryHistoryProvider, is_plain_history
from raf.core.context import ContextResult, injected_so_far
from raf.testing import ScriptedChatClient


def _agent(history: Any, *providers: Any, replies: list[Any] | None = None) -> Any:
    builder = AgentBuilder().with_chat_client(ScriptedChatClient(replies or ["one", "two"]))
    builder = builder.with_history_provider(history)
    for provider in providers:
        builder = builder.with_context_provider(provider)
    return builder.build()


async def test_a_plain_history_keeps_the_transcript_and_a_failed_run_leaves_it() -> None:
    history = InMemoryHistoryProvider()
    assert is_plain_history(history)
    model = ScriptedChatClient(["one", RuntimeError("down"), "two"])
    agent = _agent(history, replies=[])
    agent.leaf_client = model
    session = AgentSession()
    await agent.run("first", session=session)
    assert [m.text for m in session.messages] == ["first", "one"]
    with pytest.raises(RuntimeError, match="down"):
        await agent.run("second", session=session)
    assert [m.text for m in session.messages] == ["first", "one"]
    await agent.run("third", session=session)
    assert [m.text for m in session.messages] == ["first", "one", "third", "two"]
    assert [m.text for m in model.requests[2].messages] == ["first", "one", "third"]


class Seen:
    """A provider after the history: records what `injected_so_far` says to it."""

    name = "seen"
    kind = "test"

    def __init__(self) -> None:
        self.parts: list[list[tuple[str, str, list[str]]] | None] = []

    async def on_invoking(self, *args: Any) -> ContextResult:
        parts = injected_so_far()
        self.parts.append(
            None
            if parts is None
            else [(p.provider, p.kind, [m.text for m in p.messages]) for p in parts]
        )
        return ContextResult()

    async def on_invoked(self, *args: Any) -> None:
        return None


async def test_later_providers_see_what_a_plain_history_injected() -> None:
    seen = Seen()
    agent = _agent(InMemoryHistoryProvider(), seen)
    session = AgentSession()
    await agent.run("first", session=session)
    await agent.run("second", session=session)
    assert seen.parts == [[], [("history", "history", ["first", "one"])]]


class LoggingHistory(InMemoryHistoryProvider):
    def __init__(self) -> None:
        super().__init__()
        self.log: list[str] = []

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        self.log.append("invoking")
        return await super().on_invoking(agent, session, messages, options)

    async def on_invoked(
        self,
        agent: Any,
        session: AgentSession,
        request_messages: Sequence[ChatMessage],
        response: AgentResponse | None,
        error: BaseException | None,
    ) -> None:
        self.log.append("invoked")
        await super().on_invoked(agent, session, request_messages, response, error)


async def test_a_subclass_of_the_history_has_its_hooks_called() -> None:
    history = LoggingHistory()
    assert not is_plain_history(history)
    session = AgentSession()
    await _agent(history).run("first", session=session)
    assert history.log == ["invoking", "invoked"]
    assert [m.text for m in session.messages] == ["first", "one"]


async def test_a_hook_set_on_the_instance_is_called() -> None:
    history = InMemoryHistoryProvider()
    calls: list[str] = []

    async def on_invoking(*args: Any) -> ContextResult:
        calls.append("invoking")
        return ContextResult(messages=[ChatMessage.user("injected")])

    history.on_invoking = on_invoking  # type: ignore[method-assign, assignment]
    assert not is_plain_history(history)
    model = ScriptedChatClient(["one"])
    agent = _agent(history)
    agent.leaf_client = model
    await agent.run("first")
    assert calls == ["invoking"]
    assert [m.text for m in model.requests[0].messages] == ["injected", "first"]


async def test_a_hook_replaced_on_the_class_is_called(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    async def on_invoked(self: Any, *args: Any) -> None:
        calls.append("invoked")

    monkeypatch.setattr(InMemoryHistoryProvider, "on_invoked", on_invoked)
    history = InMemoryHistoryProvider()
    assert not is_plain_history(history)
    session = AgentSession()
    await _agent(history).run("first", session=session)
    assert calls == ["invoked"]
    assert session.messages == []
