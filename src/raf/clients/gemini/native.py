"""Google Gemini through its own API and the official `google-genai` SDK: thinking
budgets, safety settings, files by URI, signed thoughts and grounding in Google Search,
which the OpenAI-compatible endpoint (`gemini:`) cannot carry."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from raf.clients.base import ModelClient
from raf.clients.gemini.client import GEMINI_BASE_URL
from raf.clients.gemini.wire import GeminiWire
from raf.clients.provider import (
    DEFAULT_TIMEOUT,
    ChunkStream,
    ErrorTable,
    Provider,
    lookup_key,
    setting,
)
from raf.core.errors import MissingExtraError

__all__ = ["GoogleGenAIClient", "GoogleGenAIProvider"]

_REFUSED_KEY = ("API_KEY_INVALID", "API key not valid", "API key expired")
_NATIVE_URL = GEMINI_BASE_URL.split("/v1beta", 1)[0]


def _dump(value: Any) -> dict[str, Any]:
    dumped = value.model_dump(mode="json", exclude_none=True)
    return dumped if isinstance(dumped, dict) else {}


class _Chunks(ChunkStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for chunk in self._stream:
            yield _dump(chunk)

    async def aclose(self) -> None:
        close = getattr(self._stream, "aclose", None)
        if close is not None:
            await close()


class GoogleGenAIProvider(Provider):
    """The Gemini API (`generativelanguage.googleapis.com`) through `google-genai`."""

    protocol = "Gemini API JSON"
    hint = "; check the base URL (the Gemini API is https://generativelanguage.googleapis.com)"

    def __init__(
        self,
        *,
        api_key: str | None = None,
        api_key_env: str = "GEMINI_API_KEY",
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            from google import genai
            from google.genai import types
        except ImportError:
            raise MissingExtraError("the Google Gemini client", "google", "google-genai") from None
        key = lookup_key("gemini", api_key, api_key_env, required=True)
        url = setting(base_url, "GOOGLE_GEMINI_BASE_URL")
        super().__init__("gemini", key=key, headers=headers, base_url=url, timeout=timeout)
        options = types.HttpOptions(
            base_url=url,
            headers=dict(self.headers),
            timeout=int(timeout * 1000) if timeout else None,
        )
        self.client = genai.Client(api_key=key, http_options=options)

    @property
    def endpoint(self) -> str:
        return self.base_url or _NATIVE_URL

    def error_table(self) -> ErrorTable:
        from google.genai import errors

        return (((errors.APIError,), "status"),)

    def status_code(self, exc: BaseException) -> int:
        code = int(getattr(exc, "code", 0) or 0)
        if code == 400 and any(word in str(exc) for word in _REFUSED_KEY):
            return 401
        return code

    def status_detail(self, exc: BaseException) -> str:
        message = str(getattr(exc, "message", "") or exc)
        status = getattr(exc, "status", None)
        return f"{message} ({status})" if status and status not in message else message

    @staticmethod
    def _typed(body: dict[str, Any]) -> dict[str, Any]:
        """The body as the SDK's own types, so it writes the API's camelCase names all
        the way down (plain nested dicts would keep their snake_case keys)."""
        from google.genai import types

        return {
            "model": body["model"],
            "contents": [types.Content.model_validate(c) for c in body["contents"]],
            "config": types.GenerateContentConfig.model_validate(body["config"]),
        }

    async def complete(self, body: dict[str, Any]) -> Any:
        answer = _dump(await self.client.aio.models.generate_content(**self._typed(body)))
        answer["model"] = answer.get("model_version")
        answer["id"] = answer.get("response_id")
        return answer

    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        stream = await self.client.aio.models.generate_content_stream(**self._typed(body))
        return _Chunks(stream)

    async def aclose(self) -> None:
        await self.client.aio.aclose()


class GoogleGenAIClient(ModelClient[GeminiWire]):
    """Gemini models through the Gemini API: tools, streaming, thinking, images, PDFs and
    audio (bytes, or Files API URIs), structured output, usage.

    `thinking_budget` bounds the tokens the model thinks with (0: no thinking where the
    model allows it), `include_thoughts` streams its thought summaries as reasoning,
    `safety_settings` sets the blocking threshold per harm category, `google_search=True`
    grounds answers in Google Search (the grounding metadata streams as a `google_search`
    call's result). The key is `api_key`
    or `GEMINI_API_KEY`; `base_url` (or `GOOGLE_GEMINI_BASE_URL`) points elsewhere.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        api_key_env: str = "GEMINI_API_KEY",
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        thinking_budget: int | None = None,
        include_thoughts: bool = False,
        safety_settings: Sequence[Mapping[str, str]] | None = None,
        google_search: bool = False,
    ) -> None:
        api = GoogleGenAIProvider(
            api_key=api_key,
            api_key_env=api_key_env,
            base_url=base_url,
            headers=headers,
            timeout=timeout,
        )
        wire = GeminiWire(
            thinking_budget=thinking_budget,
            include_thoughts=include_thoughts,
            safety_settings=[dict(s) for s in safety_settings or ()],
            google_search=google_search,
        )
        super().__init__(model, api, wire)
