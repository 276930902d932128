"""OpenAI's Responses API (official SDK): the OpenAI provider on the Responses wire format."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, Literal

from raf.clients.base import ModelClient
from raf.clients.errors import ClientError, redact
from raf.clients.hosted_tools import hosted_secrets
from raf.clients.openai.client import OpenAIProvider
from raf.clients.openai.responses_wire import ResponsesWire
from raf.clients.provider import DEFAULT_TIMEOUT
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse

__all__ = ["OpenAIResponsesClient", "OpenAIResponsesProvider", "responses_client"]

Effort = Literal["minimal", "low", "medium", "high"]


class OpenAIResponsesProvider(OpenAIProvider):
    """The OpenAI service reached at `POST /responses` instead of `/chat/completions`."""

    protocol = "valid Responses API JSON"
    named = ("model", "input", "stream")

    def create(self, arguments: dict[str, Any]) -> Awaitable[Any]:
        return self.client.responses.create(**arguments)


class OpenAIResponsesClient(ModelClient[ResponsesWire]):
    """OpenAI models over the Responses API: tools (also hosted ones), streaming,
    reasoning kept across turns, structured output and usage.

    By default nothing is stored at OpenAI (`store=False`): the whole history is sent
    each turn and reasoning travels in encrypted form. `server_state=True` (which sets
    `store=True`) sends only what followed the last answer, naming it as
    `previous_response_id`. `reasoning_effort` and `reasoning_summary` set the
    `reasoning` of reasoning models. The SDK's own retries are off: wrap the client in
    `RetryingChatClient` to retry (`resolve_model("openai-responses:...")` does).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        organization: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        store: bool = False,
        server_state: bool = False,
        reasoning_effort: Effort | None = None,
        reasoning_summary: Literal["auto", "concise", "detailed"] | None = None,
        provider: str = "openai",
        api_key_env: str = "OPENAI_API_KEY",
        require_key: bool = True,
    ) -> None:
        api = OpenAIResponsesProvider(
            provider,
            api_key=api_key,
            api_key_env=api_key_env,
            require_key=require_key,
            base_url=base_url,
            headers=headers,
            organization=organization,
            timeout=timeout,
        )
        reasoning: dict[str, Any] = {}
        if reasoning_effort is not None:
            reasoning["effort"] = reasoning_effort
        if reasoning_summary is not None:
            reasoning["summary"] = reasoning_summary
        wire = ResponsesWire(
            store=store or server_state,
            server_state=server_state,
            reasoning=reasoning or None,
            model=model,
        )
        super().__init__(model, api, wire)

    @property
    def store(self) -> bool:
        return self.wire.store

    @property
    def server_state(self) -> bool:
        return self.wire.server_state

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        try:
            return await super().get_response(messages, options)
        except ClientError as exc:
            raise _without_secrets(exc, options) from None

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        try:
            async for update in super().get_streaming_response(messages, options):
                yield update
        except ClientError as exc:
            raise _without_secrets(exc, options) from None


def _without_secrets(error: ClientError, options: ChatOptions | None) -> ClientError:
    """`error` with the secrets of the request's hosted tools masked: a provider's error
    may quote the request's `tools` array, header values and all."""
    hidden = hosted_secrets(options.tools or ()) if options is not None else []
    if hidden and error.args:
        error.args = (redact(str(error.args[0]), hidden), *error.args[1:])
    return error


def responses_client(model: str, **settings: Any) -> OpenAIResponsesClient:
    """The Responses client for `model` with a document's or caller's settings; the
    hook a model declaration with `apiType: Responses` calls."""
    return OpenAIResponsesClient(model, **settings)
