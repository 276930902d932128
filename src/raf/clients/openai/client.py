"""A chat client for OpenAI and every server that speaks chat completions (official SDK)."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any

from raf.clients.base import ModelClient
from raf.clients.openai.wire import ChatCompletionsWire
from raf.clients.provider import DEFAULT_TIMEOUT, NO_KEY, ErrorTable, SdkProvider, lookup_key
from raf.core.errors import MissingExtraError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

__all__ = ["OpenAIChatClient", "OpenAIProvider"]


class OpenAIProvider(SdkProvider):
    """A chat-completions service reached through the `openai` SDK (its retries off)."""

    protocol = "valid chat-completions JSON"
    hint = "; check that the base URL points at an OpenAI-compatible API (usually ending in /v1)"
    named = ("model", "messages", "stream")

    def __init__(
        self,
        name: str = "openai",
        *,
        api_key: str | None = None,
        api_key_env: str = "OPENAI_API_KEY",
        require_key: bool = True,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        organization: str | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            import openai
        except ImportError:
            raise MissingExtraError("the OpenAI client", "openai", "openai") from None
        key = lookup_key(name, api_key, api_key_env, required=require_key) or NO_KEY
        super().__init__(name, key=key, headers=headers, base_url=base_url, timeout=timeout)
        self.client: AsyncOpenAI = openai.AsyncOpenAI(
            api_key=key, base_url=base_url, organization=organization, **self.connection()
        )

    def error_table(self) -> ErrorTable:
        import openai

        return (
            ((openai.APIStatusError,), "status"),
            ((openai.APITimeoutError,), "timeout"),
            ((openai.APIConnectionError,), "connection"),
            ((json.JSONDecodeError, openai.APIResponseValidationError), "invalid"),
            ((openai.APIError,), "failed"),
        )

    def status_detail(self, exc: BaseException) -> str:
        body = getattr(exc, "body", None)
        if isinstance(body, dict):
            error = body.get("error", body)
            if isinstance(error, dict) and error.get("message"):
                message = str(error["message"])
                code = error.get("code") or error.get("type")
                # The code says what the message may not (context_length_exceeded, ...).
                if isinstance(code, str) and code and code not in message:
                    message = f"{message} ({code})"
                return message
            if isinstance(error, str):
                return error
        return super().status_detail(exc)

    def create(self, arguments: dict[str, Any]) -> Awaitable[Any]:
        return self.client.chat.completions.create(**arguments)


class OpenAIChatClient(ModelClient[ChatCompletionsWire]):
    """Chat completions with tools, streaming, usage and reasoning over the `openai` SDK.

    `base_url` points it at any compatible server (Azure OpenAI, Ollama, vLLM, llama.cpp,
    DeepSeek, Qwen, ...). The key comes from `api_key` or the `api_key_env` variable;
    `require_key=False` lets servers without authentication be used. The SDK's own
    retries are off: wrap the client in `RetryingChatClient` to retry.
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
        provider: str = "openai",
        api_key_env: str = "OPENAI_API_KEY",
        require_key: bool = True,
        stream_usage: bool = True,
    ) -> None:
        api = OpenAIProvider(
            provider,
            api_key=api_key,
            api_key_env=api_key_env,
            require_key=require_key,
            base_url=base_url,
            headers=headers,
            organization=organization,
            timeout=timeout,
        )
        native = provider == "openai" and not base_url
        wire = ChatCompletionsWire(
            max_tokens_field="max_completion_tokens" if native else "max_tokens",
            stream_usage=stream_usage,
        )
        super().__init__(model, api, wire)

    @property
    def max_tokens_field(self) -> str:
        """The request field that carries `max_tokens` for this server."""
        return self.wire.max_tokens_field

    @property
    def stream_usage(self) -> bool:
        return self.wire.stream_usage
