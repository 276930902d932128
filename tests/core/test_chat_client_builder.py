"""ChatClientBuilder stacks decorators on a leaf client, last added outermost."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence

import pytest

from raf import AgentBuilder, ChatClient, ChatClientBuilder, ChatMessage, ChatOptions, ChatResponse
from raf.core.chat_client import innermost
from raf.core.errors import ConfigurationError
from raf.core.responses import AgentResponseUpdate
from raf.testing import ScriptedChatClient


class Tagging:
    """A decorator that records the order in which calls pass through it."""

    def __init__(self, inner: ChatClient, tag: str, log: list[str]) -> None:
        self.inner = inner
        self.tag = tag
        self.log = log

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> ChatResponse:
        self.log.append(self.tag)
        return await self.inner.get_response(messages, options)

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[AgentResponseUpdate]:
        self.log.append(self.tag)
        async for update in self.inner.get_streaming_response(messages, options):
            yield update


async def test_decorators_wrap_in_order_and_innermost_finds_the_leaf() -> None:
    log: list[str] = []
    leaf = ScriptedChatClient(["hi", "again"])
    client = (
        ChatClientBuilder(leaf)
        .use(lambda c: Tagging(c, "inner", log))
        .use(lambda c: Tagging(c, "outer", log))
        .build()
    )
    assert (await client.get_response([], ChatOptions())).text == "hi"
    assert log == ["outer", "inner"]
    assert innermost(client) is leaf
    agent = AgentBuilder().with_chat_client(leaf).with_decorator(lambda c: Tagging(c, "agent", log))
    assert (await agent.build().run("x")).text == "again"
    assert log[-1] == "agent"


def test_builder_without_leaf_or_with_a_bad_decorator_is_refused() -> None:
    with pytest.raises(ConfigurationError, match="no leaf client"):
        ChatClientBuilder().build()
    with pytest.raises(ConfigurationError, match="not a ChatClient"):
        ChatClientBuilder(ScriptedChatClient()).use(lambda c: object()).build()  # type: ignore[arg-type,return-value]
