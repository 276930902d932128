"""A chat client for Claude models over the official `anthropic` SDK (Messages API)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from raf.clients.anthropic.wire import (
    DEFAULT_MAX_TOKENS,
    MessagesWire,
    message_to_events,
    to_anthropic_messages,
    to_anthropic_tool_choice,
    to_anthropic_tools,
    usage_from,
)
from raf.clients.base import ModelClient
from raf.clients.errors import safe_url
from raf.clients.provider import (
    ChunkStream,
    ErrorTable,
    Provider,
    SdkStream,
    lookup_key,
    sdk_arguments,
)
from raf.core.errors import MissingExtraError

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "DEFAULT_TIMEOUT",
    "AnthropicChatClient",
    "AnthropicProvider",
    "message_to_events",
    "to_anthropic_messages",
    "to_anthropic_tool_choice",
    "to_anthropic_tools",
    "usage_from",
]

DEFAULT_TIMEOUT = 120.0
_NAMED = ("model", "messages", "max_tokens", "stream")


class AnthropicProvider(Provider):
    """Anthropic's API reached through the `anthropic` SDK (its retries off)."""

    protocol = "the Messages API"
    hint = "; check the base URL (the server's root, without /v1)"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        api_key_env: str = "ANTHROPIC_API_KEY",
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            import anthropic
        except ImportError:
            raise MissingExtraError("the Anthropic client", "anthropic", "anthropic") from None
        key = lookup_key("anthropic", api_key, api_key_env, required=True) or ""
        super().__init__("anthropic", key=key, headers=headers, base_url=base_url, timeout=timeout)
        self.client: AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=key,
            base_url=base_url,
            # The Messages API's own key header; some SDK versions send only a bearer token,
            # which compatible servers (and gateways) may not accept.
            default_headers={"x-api-key": key, **dict(headers or {})},
            timeout=timeout,
            max_retries=0,
        )

    @property
    def endpoint(self) -> str:
        return safe_url(str(self.client.base_url), self.hidden())

    def error_table(self) -> ErrorTable:
        import anthropic

        return (
            ((anthropic.APIStatusError,), "status"),
            ((anthropic.APITimeoutError,), "timeout"),
            ((anthropic.APIConnectionError,), "connection"),
            ((json.JSONDecodeError, anthropic.APIError), "invalid"),
        )

    def status_detail(self, exc: BaseException) -> str:
        body = getattr(exc, "body", None)
        body = body if isinstance(body, dict) else {}
        error = body.get("error") if isinstance(body.get("error"), dict) else body
        return str((error or {}).get("message") or super().status_detail(exc))

    async def complete(self, body: dict[str, Any]) -> Any:
        message = await self.client.messages.create(**sdk_arguments(body, _NAMED))
        return message.model_dump() if hasattr(message, "model_dump") else message

    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        return SdkStream(await self.client.messages.create(**sdk_arguments(body, _NAMED)))

    async def aclose(self) -> None:
        await self.client.close()


class AnthropicChatClient(ModelClient[MessagesWire]):
    """Claude over the Messages API: system prompt, tool use, thinking, cache usage.

    The key comes from `api_key` or `ANTHROPIC_API_KEY`. The SDK's own retries are off:
    wrap the client in `RetryingChatClient` to retry.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        api_key_env: str = "ANTHROPIC_API_KEY",
    ) -> None:
        api = AnthropicProvider(
            api_key=api_key,
            api_key_env=api_key_env,
            base_url=base_url,
            headers=headers,
            timeout=timeout,
        )
        super().__init__(model, api, MessagesWire(max_tokens=max_tokens))

    @property
    def max_tokens(self) -> int:
        """The answer limit sent when the options set none."""
        return self.wire.max_tokens
