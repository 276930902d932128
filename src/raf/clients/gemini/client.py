"""Google Gemini through its OpenAI-compatible endpoint: a provider on the chat-completions wire.

Only what is Google's own lives here: the key variable, the default base URL, and how
its errors read (a JSON list or object with a `status` word; a refused key arrives as
HTTP 400 `API_KEY_INVALID`, which is an authentication failure, not a bad request).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from raf.clients.base import ModelClient
from raf.clients.openai.client import OpenAIProvider
from raf.clients.openai.wire import ChatCompletionsWire
from raf.clients.provider import DEFAULT_TIMEOUT, setting

__all__ = ["GEMINI_BASE_URL", "GeminiChatClient", "GeminiProvider"]

GEMINI_BASE_URL = "https://generativelanguage.googleapis.com/v1beta/openai/"
"""Google's own OpenAI-compatible endpoint; `GEMINI_BASE_URL` (a gateway, a Vertex AI
endpoint) overrides it."""
_REFUSED_KEY = ("API_KEY_INVALID", "API key not valid", "API key expired")


def _error_object(body: Any) -> dict[str, Any] | None:
    """Google's `{"error": {...}}`, also when the endpoint wraps it in a list."""
    if isinstance(body, list) and body:
        body = body[0]
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            return error
    return None


class GeminiProvider(OpenAIProvider):
    """Gemini's OpenAI-compatible API: key from `GEMINI_API_KEY`, Google's error shapes."""

    hint = (
        "; check the base URL (Gemini's OpenAI-compatible API is "
        f"{GEMINI_BASE_URL}, GEMINI_BASE_URL overrides it)"
    )

    def __init__(
        self,
        *,
        api_key: str | None = None,
        api_key_env: str = "GEMINI_API_KEY",
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        super().__init__(
            "gemini",
            api_key=api_key,
            api_key_env=api_key_env,
            base_url=setting(base_url, "GEMINI_BASE_URL", GEMINI_BASE_URL),
            headers=headers,
            timeout=timeout,
        )

    def status_detail(self, exc: BaseException) -> str:
        error = _error_object(getattr(exc, "body", None))
        if error is None or not error.get("message"):
            return super().status_detail(exc)
        message = str(error["message"])
        status = error.get("status")
        if isinstance(status, str) and status and status not in message:
            message = f"{message} ({status})"
        return message

    def status_code(self, exc: BaseException) -> int:
        code = super().status_code(exc)
        detail = str(getattr(exc, "body", "") or "")
        if code == 400 and any(word in detail for word in _REFUSED_KEY):
            return 401
        return code


class GeminiChatClient(ModelClient[ChatCompletionsWire]):
    """Gemini models (`gemini-2.5-flash`, ...) with tools, streaming and usage.

    The key comes from `api_key` or `GEMINI_API_KEY`; `base_url` (or `GEMINI_BASE_URL`)
    points it elsewhere. The SDK's own retries are off: wrap the client in
    `RetryingChatClient` to retry (`resolve_model("gemini:...")` does).
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        api_key_env: str = "GEMINI_API_KEY",
    ) -> None:
        api = GeminiProvider(
            api_key=api_key,
            api_key_env=api_key_env,
            base_url=base_url,
            headers=headers,
            timeout=timeout,
        )
        super().__init__(model, api, ChatCompletionsWire())
