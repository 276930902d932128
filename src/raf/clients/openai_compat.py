"""A chat client for OpenAI and every server that speaks chat completions (official SDK)."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from raf.clients.errors import (
    ClientError,
    InvalidResponseError,
    MissingApiKeyError,
    Secret,
    connection_error,
    error_for_status,
    header_secrets,
    mask_key,
    parse_retry_after,
    redact,
    safe_url,
    stream_interrupted,
    timeout_error,
    transport_kind,
)
from raf.clients.openai_wire import (
    ChunkAssembler,
    completion_to_updates,
    to_openai_messages,
    to_openai_tool_choice,
    to_openai_tools,
)
from raf.core.errors import MissingExtraError
from raf.core.messages import ChatMessage, new_id
from raf.core.options import ChatOptions
from raf.core.responses import AgentResponseUpdate, ChatResponse, fold_updates

if TYPE_CHECKING:
    from openai import AsyncOpenAI

DEFAULT_TIMEOUT = 120.0
NO_KEY = "not-needed"
"""Sent to servers that need no key (Ollama, vLLM, llama.cpp): the SDK insists on one."""


class OpenAIChatClient:
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
        try:
            import openai
        except ImportError:
            raise MissingExtraError("the OpenAI client", "openai", "openai") from None
        key = api_key or os.environ.get(api_key_env)
        if not key:
            if require_key:
                raise MissingApiKeyError(provider, api_key_env)
            key = NO_KEY
        self.model = model
        self.provider = provider
        self.timeout = timeout
        self.stream_usage = stream_usage
        self.max_tokens_field = (
            "max_completion_tokens" if provider == "openai" and not base_url else "max_tokens"
        )
        self._key = Secret(key)
        hidden = [key] if key != NO_KEY else []
        self._secrets = [Secret(value) for value in [*hidden, *header_secrets(headers)]]
        self.base_url = safe_url(base_url, self._hidden()) if base_url else None
        """Where requests go, as shown in messages (credentials cut out)."""
        self._client: AsyncOpenAI = openai.AsyncOpenAI(
            api_key=key,
            base_url=base_url,
            organization=organization,
            default_headers=dict(headers or {}),
            timeout=timeout,
            max_retries=0,
        )

    def __repr__(self) -> str:
        where = f", base_url={self.base_url!r}" if self.base_url else ""
        return (
            f"OpenAIChatClient(model={self.model!r}, provider={self.provider!r}{where}, "
            f"api_key={mask_key(None if self._key.reveal() == NO_KEY else self._key.reveal())})"
        )

    async def aclose(self) -> None:
        await self._client.close()

    def _request(
        self, messages: Sequence[ChatMessage], options: ChatOptions, *, stream: bool
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": options.model_id or self.model,
            "messages": to_openai_messages(messages),
        }
        if options.tools and options.tool_choice != "none":
            body["tools"] = to_openai_tools(options.tools)
            if options.tool_choice is not None:
                body["tool_choice"] = to_openai_tool_choice(options.tool_choice)
        for name in ("temperature", "top_p", "stop", "seed", "response_format"):
            value = getattr(options, name)
            if value is not None:
                body[name] = value
        if options.max_tokens is not None:
            # OpenAI's own API replaced max_tokens (reasoning models refuse it); other
            # servers mostly know only the old name.
            body[self.max_tokens_field] = options.max_tokens
        if stream:
            body["stream"] = True
            if self.stream_usage:
                body["stream_options"] = {"include_usage": True}
        if options.additional:
            body["extra_body"] = dict(options.additional)
        return body

    def _hidden(self) -> list[str]:
        """The key and credential header values, to cut out of every message."""
        return [secret.reveal() for secret in self._secrets]

    def _redact(self, exc: BaseException) -> str:
        return redact(str(exc), self._hidden())

    def _model(self, options: ChatOptions) -> str:
        return options.model_id or self.model

    def _translate(self, exc: BaseException, options: ChatOptions) -> BaseException:
        """SDK and transport errors as raf errors; anything unknown passes unchanged."""
        import openai

        model = self._model(options)
        base = safe_url(str(self._client.base_url), self._hidden())
        if isinstance(exc, ClientError):
            return exc
        if isinstance(exc, openai.APIStatusError):
            detail = _status_detail(exc)
            return error_for_status(
                exc.status_code,
                detail,
                provider=self.provider,
                model=model,
                base_url=base,
                retry_after=parse_retry_after(exc.response.headers.get("retry-after")),
                secrets=self._hidden(),
            )
        if isinstance(exc, openai.APITimeoutError):
            return timeout_error(self.provider, model, self.timeout)
        if isinstance(exc, openai.APIConnectionError):
            return connection_error(
                self.provider, model, base, exc.__cause__ or exc, self._hidden()
            )
        kind = transport_kind(exc)
        if kind == "timeout":
            return timeout_error(self.provider, model, self.timeout)
        if kind == "connection":
            return connection_error(self.provider, model, base, exc, self._hidden())
        if isinstance(exc, (json.JSONDecodeError, openai.APIResponseValidationError)):
            return InvalidResponseError(
                f"{self.provider} at {base} sent a response that is not valid chat-completions "
                f"JSON: {self._redact(exc)[:300]}; check that the base URL points "
                "at an OpenAI-compatible API (usually ending in /v1)",
                provider=self.provider,
                model=model,
            )
        if isinstance(exc, openai.APIError):
            return InvalidResponseError(
                f"{self.provider} reported an error: {self._redact(exc)[:300]}",
                provider=self.provider,
                model=model,
                retryable=False,
            )
        return exc

    async def get_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> ChatResponse:
        options = options if options is not None else ChatOptions()
        body = self._request(messages, options, stream=False)
        try:
            completion = await self._client.chat.completions.create(**body)
        except Exception as exc:
            raise self._translate(exc, options) from None
        if not hasattr(completion, "model_dump"):  # the SDK hands back non-JSON as text
            raise InvalidResponseError(
                f"{self.provider} at {self.base_url or self._client.base_url} answered with "
                f"something that is not chat-completions JSON ({str(completion)[:80]!r}); check "
                "that the base URL points at an OpenAI-compatible API (usually ending in /v1)",
                provider=self.provider,
                model=self._model(options),
            )
        data = completion.model_dump()
        if not isinstance(data, dict) or not data.get("choices"):
            raise InvalidResponseError(
                f"{self.provider} answered without choices; check the base URL and model",
                provider=self.provider,
                model=self._model(options),
            )
        response = fold_updates(completion_to_updates(data, new_id("msg")))
        response.model_id = data.get("model") or self._model(options)
        response.response_id = data.get("id")
        return response

    async def get_streaming_response(
        self, messages: Sequence[ChatMessage], options: ChatOptions | None = None
    ) -> AsyncIterator[AgentResponseUpdate]:
        options = options if options is not None else ChatOptions()
        body = self._request(messages, options, stream=True)
        assembler = ChunkAssembler(new_id("msg"))
        yielded = False
        try:
            stream = await self._client.chat.completions.create(**body)
        except Exception as exc:
            raise self._translate(exc, options) from None
        try:
            async for chunk in stream:
                for update in assembler.feed(chunk.model_dump()):
                    yielded = True
                    yield update
        except Exception as exc:
            error = self._translate(exc, options)
            if yielded and not isinstance(error, InvalidResponseError):
                raise stream_interrupted(
                    self.provider, self._model(options), exc, self._hidden()
                ) from None
            raise error from None
        finally:  # on errors, cancellation and a consumer that stops early alike
            await stream.close()
        if assembler.chunks == 0:
            raise InvalidResponseError(
                f"{self.provider} at {safe_url(str(self._client.base_url), self._hidden())} ended "
                "the stream without any event; check that the base URL points at an "
                "OpenAI-compatible API (usually ending in /v1) and that the server streams",
                provider=self.provider,
                model=self._model(options),
            )
        if not assembler.finished:
            raise stream_interrupted(
                self.provider, self._model(options), EOFError("the stream ended before its end")
            )
        for update in assembler.finish():
            yield update


def _status_detail(exc: Any) -> str:
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
    return str(getattr(exc, "message", "") or exc)
