"""Compression compresses everything accumulated before it: the session's history and the
messages earlier providers injected, which it used to drop."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from raf.agent.builder import AgentBuilder
from raf.context.compression import CompressionProvider, SlidingWindowStrategy
from raf.context.workspace import WorkspaceContextProvider
from raf.core.context import BaseContextProvider, ContextResult
from raf.core.messages import ChatMessage
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient


class Notes(BaseContextProvider):
    """Injects messages (a retrieval provider's way of adding context)."""

    def __init__(self, *texts: str) -> None:
        self.name = "notes"
        self.kind = "notes"
        self.texts = texts

    async def on_invoking(self, agent: Any, session: Any, messages: Any, options: Any) -> Any:
        return ContextResult(messages=[ChatMessage.user(t) for t in self.texts])


def texts(client: ScriptedChatClient, index: int = 0) -> list[str]:
    return [m.text for m in client.requests[index].messages]


async def test_messages_injected_before_compression_reach_the_model():
    model = ScriptedChatClient(["one", "two"])
    compression = CompressionProvider(SlidingWindowStrategy(keep_last=10), 10_000)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_context_provider(compression.watch(Notes("NOTE: the office moved")))
        .with_context_provider(compression)
        .build()
    )
    session = agent.create_session()
    await agent.run("first", session=session)
    await agent.run("second", session=session)
    assert texts(model, 1) == ["first", "one", "NOTE: the office moved", "second"]


async def test_injected_messages_are_compressed_with_the_history():
    model = ScriptedChatClient(["ok"])
    compression = CompressionProvider(SlidingWindowStrategy(keep_last=2), 10_000)
    notes = compression.watch(Notes("n1", "n2", "n3"))
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_context_provider(notes)
        .with_context_provider(compression)
        .build()
    )
    await agent.run("go")
    assert texts(model) == ["n2", "n3", "go"]


async def test_declared_compression_watches_every_provider_before_it(tmp_path: Path):
    (tmp_path / "agent.yaml").write_text(
        "name: a\ncontexts:\n  - {kind: workspace, config: {root: .}}\n"
        "compression: {kind: sliding_window, keepLast: 10}\n"
    )
    model = ScriptedChatClient(["ok"])
    agent = (
        DeclAgentBuilder()
        .from_file(tmp_path / "agent.yaml")
        .with_context(Notes("NOTE: from code"))
        .with_chat_client(model)
        .build()
    )
    assert [p.kind for p in agent.context_providers] == [
        "history",
        "workspace",
        "notes",
        "compression",
    ]
    assert isinstance(agent.context_providers[1], WorkspaceContextProvider)
    await agent.run("go")
    assert texts(model)[-2:] == ["NOTE: from code", "go"]


async def test_injected_messages_are_kept_without_watch():
    """Compression sees what providers before it injected in the run, unwrapped."""
    model = ScriptedChatClient(["one", "two"])
    compression = CompressionProvider(SlidingWindowStrategy(keep_last=10), 10_000)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_context_provider(Notes("NOTE: the office moved"))
        .with_context_provider(compression)
        .build()
    )
    session = agent.create_session()
    await agent.run("first", session=session)
    await agent.run("second", session=session)
    assert texts(model, 0) == ["NOTE: the office moved", "first"]
    assert texts(model, 1) == ["first", "one", "NOTE: the office moved", "second"]


async def test_unwatched_injected_messages_are_compressed_with_the_history():
    model = ScriptedChatClient(["ok"])
    compression = CompressionProvider(SlidingWindowStrategy(keep_last=2), 10_000)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_context_provider(Notes("n1", "n2", "n3"))
        .with_context_provider(compression)
        .build()
    )
    await agent.run("go")
    assert texts(model) == ["n2", "n3", "go"]


async def test_history_provider_messages_are_not_counted_twice():
    """The history provider (every agent's first) injects the session's messages, which
    compression already takes from the session: each reaches the model once."""
    model = ScriptedChatClient(["one", "two"])
    compression = CompressionProvider(SlidingWindowStrategy(keep_last=10), 10_000)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_context_provider(Notes("note"))
        .with_context_provider(compression)
        .build()
    )
    assert [p.kind for p in agent.context_providers] == ["history", "notes", "compression"]
    session = agent.create_session()
    await agent.run("first", session=session)
    await agent.run("second", session=session)
    assert texts(model, 1) == ["first", "one", "note", "second"]


async def test_a_watched_provider_is_not_counted_twice():
    model = ScriptedChatClient(["ok"])
    compression = CompressionProvider(SlidingWindowStrategy(keep_last=10), 10_000)
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_context_provider(compression.watch(Notes("note")))
        .with_context_provider(compression)
        .build()
    )
    await agent.run("go")
    assert texts(model) == ["note", "go"]
