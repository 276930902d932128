"""A chat client for Claude models over the official `anthropic` SDK (Messages API)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
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
from raf.clients.provider import DEFAULT_TIMEOUT, ErrorTable, SdkProvider, lookup_key
from raf.core.errors import MissingExtraError

if TYPE_CHECKING:
    from anthropic import AsyncAnthropic

__all__ = [
    "DEFAULT_MAX_TOKENS",
    "AnthropicChatClient",
    "AnthropicProvider",
    "message_to_events",
    "to_anthropic_messages",
    "to_anthropic_tool_choice",
    "to_anthropic_tools",
    "usage_from",
]


class AnthropicProvider(SdkProvider):
    """Anthropic's API reached through the `anthropic` SDK (its retries off)."""

    protocol = "the Messages API"
    hint = "; check the base URL (the server's root, without /v1)"
    named = ("model", "messages", "max_tokens", "stream")

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
        connection = self.connection()
        # The Messages API's own key header; some SDK versions send only a bearer token,
        # which compatible servers (and gateways) may not accept.
        connection["default_headers"] = {"x-api-key": key, **self.headers}
        self.client: AsyncAnthropic = anthropic.AsyncAnthropic(
            api_key=key, base_url=base_url, **connection
        )

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

    def create(self, arguments: dict[str, Any]) -> Awaitable[Any]:
        return self.client.messages.create(**arguments)


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
