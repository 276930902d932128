"""Ollama's native API (`/api/chat`, streamed as JSON lines) over httpx: its own options
(`keep_alive`, `num_ctx`, a structured `format`, `think`) that the OpenAI-compatible
endpoint cannot carry."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Mapping
from typing import TYPE_CHECKING, Any

from raf.clients.base import ModelClient
from raf.clients.ollama.url import ollama_native_url
from raf.clients.ollama.wire import OllamaWire
from raf.clients.provider import ChunkStream, ErrorTable, Provider
from raf.core.errors import MissingExtraError

if TYPE_CHECKING:
    import httpx

__all__ = ["OllamaClient", "OllamaProvider", "ollama_native_url"]

DEFAULT_TIMEOUT = 300.0
"""Ollama loads a model on its first request, which can take minutes on a CPU."""


class _Lines(ChunkStream):
    """An HTTP response of JSON lines, one event per line."""

    def __init__(self, response: httpx.Response) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for line in self._response.aiter_lines():
            if line.strip():
                yield json.loads(line)

    async def aclose(self) -> None:
        await self._response.aclose()


class OllamaProvider(Provider):
    """An Ollama server reached with httpx (a key is sent only when one is given)."""

    protocol = "Ollama's /api/chat JSON"
    hint = "; check the base URL (Ollama listens on http://127.0.0.1:11434, OLLAMA_HOST moves it)"

    def __init__(
        self,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
    ) -> None:
        try:
            import httpx
        except ImportError:
            raise MissingExtraError("the Ollama client", "ollama", "httpx") from None
        url = (base_url or ollama_native_url()).rstrip("/")
        super().__init__("ollama", key=api_key, headers=headers, base_url=url, timeout=timeout)
        sent = dict(self.headers)
        if api_key:
            sent["Authorization"] = f"Bearer {api_key}"
        self.client = httpx.AsyncClient(base_url=url, headers=sent, timeout=timeout)

    def error_table(self) -> ErrorTable:
        import httpx

        return (
            ((httpx.HTTPStatusError,), "status"),
            ((httpx.TimeoutException,), "timeout"),
            ((httpx.TransportError,), "connection"),
            ((json.JSONDecodeError,), "invalid"),
        )

    def status_code(self, exc: BaseException) -> int:
        response = getattr(exc, "response", None)
        return int(getattr(response, "status_code", 0) or 0)

    def status_detail(self, exc: BaseException) -> str:
        response = getattr(exc, "response", None)
        try:
            error = response.json().get("error") if response is not None else None
        except (ValueError, AttributeError):
            error = None
        return str(error) if error else (response.text[:300] if response is not None else "")

    async def complete(self, body: dict[str, Any]) -> Any:
        response = await self.client.post("/api/chat", json=body)
        response.raise_for_status()
        return response.json()

    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        request = self.client.build_request("POST", "/api/chat", json=body)
        response = await self.client.send(request, stream=True)
        if response.is_error:
            await response.aread()  # the error's words are in the body
            await response.aclose()
            response.raise_for_status()
        return _Lines(response)

    async def aclose(self) -> None:
        await self.client.aclose()


class OllamaClient(ModelClient[OllamaWire]):
    """Models served by Ollama through its native API: tools, streaming, thinking,
    images, usage, and Ollama's own options.

    `keep_alive` keeps the model loaded (`"30m"`, `-1` for ever), `num_ctx` sets the
    context window Ollama loads it with, `format` asks for JSON (`"json"` or a schema;
    an agent's output type sets it), `think` turns thinking on or off, `options` passes
    any other model option. The base URL is `OLLAMA_BASE_URL` or `OLLAMA_HOST` (without
    `/v1`), else `http://127.0.0.1:11434`.
    """

    reports_model = True

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        headers: Mapping[str, str] | None = None,
        timeout: float | None = DEFAULT_TIMEOUT,
        keep_alive: str | int | None = None,
        num_ctx: int | None = None,
        format: str | dict[str, Any] | None = None,
        think: bool | None = None,
        options: Mapping[str, Any] | None = None,
    ) -> None:
        api = OllamaProvider(base_url=base_url, api_key=api_key, headers=headers, timeout=timeout)
        wire = OllamaWire(
            keep_alive=keep_alive,
            num_ctx=num_ctx,
            format=format,
            think=think,
            options=dict(options or {}),
        )
        super().__init__(model, api, wire)
