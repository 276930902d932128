"""The ChatClient protocol (two calls) and the builder that stacks decorators on a leaf."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Sequence
from typing import Protocol, runtime_checkable

from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse


@runtime_checkable
class ChatClient(Protocol):
    """A model behind one request/response call and one streaming call."""

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> ChatResponse: ...

    def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions
    ) -> AsyncIterator[AgentResponseUpdate]: ...


ChatClientDecorator = Callable[[ChatClient], ChatClient]
"""Takes the client below and returns one that wraps it."""


class ChatClientBuilder:
    """Builds a pipeline: `ChatClientBuilder(leaf).use(retry).use(logging).build()`.

    Decorators are applied in the order given, so the last one added is outermost.
    """

    def __init__(self, leaf: ChatClient | None = None) -> None:
        self._leaf = leaf
        self._decorators: list[ChatClientDecorator] = []

    def leaf(self, client: ChatClient) -> ChatClientBuilder:
        self._leaf = client
        return self

    def use(self, decorator: ChatClientDecorator) -> ChatClientBuilder:
        self._decorators.append(decorator)
        return self

    use_decorator = use

    def build(self) -> ChatClient:
        from raf.core.errors import ConfigurationError

        if self._leaf is None:
            raise ConfigurationError("ChatClientBuilder.build(): no leaf client was given")
        client = self._leaf
        for decorator in self._decorators:
            client = decorator(client)
            if not isinstance(client, ChatClient):
                raise ConfigurationError(
                    f"decorator {decorator!r} returned {client!r}, which is not a ChatClient"
                )
        return client


def innermost(client: ChatClient) -> ChatClient:
    """The leaf under any decorators that expose `inner`."""
    seen = 0
    while hasattr(client, "inner") and seen < 64:
        inner = client.inner
        if not isinstance(inner, ChatClient):
            break
        client = inner
        seen += 1
    return client
