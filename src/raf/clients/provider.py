"""Where a model lives: its key, its base URL, the connection that reaches it, its errors.

A `Provider` knows nothing of the request's shape (that is the wire format's job): it
sends a body it is given and hands back the answer as a dict, or the stream as dicts,
and turns whatever its SDK or transport raises into raf errors through a table.
"""

from __future__ import annotations

import json
import os
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Mapping, Sequence
from typing import Any, ClassVar, Literal

from raf.clients.errors import (
    ClientError,
    InvalidResponseError,
    MissingApiKeyError,
    Secret,
    connection_error,
    error_for_status,
    header_secrets,
    parse_retry_after,
    redact,
    safe_url,
    timeout_error,
    transport_kind,
)
from raf.clients.sdk_logs import guard_sdk_logs

ErrorKind = Literal["status", "timeout", "connection", "invalid", "failed"]
"""What an exception means: an HTTP status, a timeout, no connection, a reply that is not
the protocol, or a failure the provider reported that no retry mends."""

ErrorTable = Sequence[tuple[tuple[type[BaseException], ...], ErrorKind]]
"""Exception types and what they mean, in order: the first row that matches decides."""

_REQUEST_ID_HEADERS = (
    "x-request-id",
    "request-id",
    "apim-request-id",
    "x-amzn-requestid",
    "x-goog-request-id",
)
"""Where providers put a request's id: OpenAI, Anthropic, Azure, AWS, Google."""

NO_KEY = "not-needed"
"""Sent to servers that need no key (Ollama, vLLM, llama.cpp): SDKs insist on one."""

DEFAULT_TIMEOUT = 120.0
"""Seconds a hosted model has to answer one request."""


def setting(given: str | None, env: str, default: str | None = None) -> str | None:
    """A setting given in code, else its environment variable (blank is unset), else the
    default: how every provider finds its key, base URL and the like."""
    return given or os.environ.get(env, "").strip() or default


def lookup_key(provider: str, api_key: str | None, env: str, *, required: bool) -> str | None:
    """The key given, else the one in `env`; none where one is required is an error."""
    key = setting(api_key, env)
    if not key and required:
        raise MissingApiKeyError(provider, env)
    return key


def sdk_arguments(body: dict[str, Any], named: Sequence[str]) -> dict[str, Any]:
    """A JSON body as SDK keyword arguments: the `named` ones as such, the rest sent as
    they are (`extra_body`), so the SDK never drops or reshapes a field it does not know."""
    arguments = {name: body[name] for name in named if name in body}
    rest = {key: value for key, value in body.items() if key not in arguments}
    if rest:
        arguments["extra_body"] = rest
    return arguments


class ChunkStream(ABC):
    """An open stream of decoded events (dicts) that must be closed, however it ends."""

    @abstractmethod
    def __aiter__(self) -> AsyncIterator[dict[str, Any]]: ...

    @abstractmethod
    async def aclose(self) -> None: ...


class SdkStream(ChunkStream):
    """An SDK's async stream of pydantic events, as dicts."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[dict[str, Any]]:
        async for event in self._stream:
            yield event.model_dump()

    async def aclose(self) -> None:
        await self._stream.close()


class Provider(ABC):
    """One model service: credentials that never show, where it is, how to call it, and
    its errors as a table that `translate` reads."""

    protocol = "the provider's API"
    """What its answers should be, for messages ("valid chat-completions JSON")."""
    hint = ""
    """Advice appended when an answer is not the protocol (usually: check the base URL)."""

    def __init__(
        self,
        name: str,
        *,
        key: str | None = None,
        headers: Mapping[str, str] | None = None,
        base_url: str | None = None,
        timeout: float | None = None,
        secrets: Sequence[str | None] = (),
    ) -> None:
        """`secrets`: credentials besides the key and headers to cut out of messages."""
        self.name = name
        self.timeout = timeout
        self.headers = dict(headers or {})
        """Headers sent with every request (credential ones are cut out of messages)."""
        self.has_key = bool(key) and key != NO_KEY
        hidden = [key] if key and key != NO_KEY else []
        hidden += [*header_secrets(headers), *(value for value in secrets if value)]
        self._secrets = tuple(Secret(value) for value in hidden)
        guard_sdk_logs(hidden)  # the SDKs log request headers at DEBUG
        self.base_url = safe_url(base_url, self.hidden()) if base_url else None
        """Where requests go, as shown in messages (credentials cut out); None: the default."""

    def hidden(self) -> list[str]:
        """The key and credential header values, to cut out of every message."""
        return [secret.reveal() for secret in self._secrets]

    def redact(self, exc: BaseException | str) -> str:
        return redact(str(exc), self.hidden())

    @property
    def endpoint(self) -> str:
        """The URL requests really go to, fit for messages ("" where there is none)."""
        return self.base_url or ""

    def error_table(self) -> ErrorTable:
        """This provider's exception types and what they mean (its SDK is imported here)."""
        return ()

    def status_detail(self, exc: BaseException) -> str:
        """The provider's own words from an error that carries an HTTP status."""
        return str(getattr(exc, "message", "") or exc)

    def status_code(self, exc: BaseException) -> int:
        """The HTTP status an error means (a provider may know better than the status line)."""
        return int(getattr(exc, "status_code", 0) or 0)

    def request_id(self, exc: BaseException) -> str | None:
        """The id the provider gave a failed request: the SDK's, else a response header."""
        found = getattr(exc, "request_id", None)
        if isinstance(found, str) and found:
            return found
        headers = getattr(getattr(exc, "response", None), "headers", None) or {}
        for name in _REQUEST_ID_HEADERS:
            value = headers.get(name)
            if value:
                return str(value)
        return None

    @abstractmethod
    async def complete(self, body: dict[str, Any]) -> Any:
        """Send one request; the whole answer as a dict (anything else is not the protocol)."""

    @abstractmethod
    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        """Send one streaming request and return its events as they come."""

    async def aclose(self) -> None:  # noqa: B027 - most providers hold something to close
        """Close connections this provider holds (none by default)."""

    def translate(self, exc: BaseException, model: str) -> BaseException:
        """SDK and transport errors as raf errors; raf errors and unknowns pass unchanged."""
        if isinstance(exc, ClientError):
            return exc
        kind: ErrorKind | None = None
        for types, meaning in self.error_table():
            if isinstance(exc, types):
                kind = meaning
                break
        cause: BaseException = exc.__cause__ or exc
        if kind is None:
            transport = transport_kind(exc)
            if transport in ("timeout", "connection"):
                kind, cause = ("timeout" if transport == "timeout" else "connection"), exc
            elif isinstance(exc, json.JSONDecodeError):
                kind = "invalid"
        if kind == "status":
            response = getattr(exc, "response", None)
            headers = getattr(response, "headers", None) or {}
            return error_for_status(
                self.status_code(exc),
                self.status_detail(exc),
                provider=self.name,
                model=model,
                base_url=self.endpoint,
                retry_after=parse_retry_after(headers.get("retry-after")),
                secrets=self.hidden(),
                request_id=self.request_id(exc),
            )
        if kind == "timeout":
            return timeout_error(self.name, model, self.timeout)
        if kind == "connection":
            return connection_error(self.name, model, self.endpoint, cause, self.hidden())
        if kind == "invalid":
            return InvalidResponseError(
                f"{self._at()} sent a response that is not {self.protocol}: "
                f"{self.redact(exc)[:300]}{self.hint}",
                provider=self.name,
                model=model,
            )
        if kind == "failed":
            return InvalidResponseError(
                f"{self.name} reported an error: {self.redact(exc)[:300]}",
                provider=self.name,
                model=model,
                retryable=False,
            )
        return exc

    def not_the_api(self, what: str, model: str) -> InvalidResponseError:
        """The error for an answer that is not this protocol at all (a web page, no events)."""
        return InvalidResponseError(
            f"{self._at()} answered with {self.redact(what)}, not {self.protocol}{self.hint}",
            provider=self.name,
            model=model,
        )

    def _at(self) -> str:
        endpoint = safe_url(self.endpoint, self.hidden())
        return f"{self.name} at {endpoint}" if endpoint else self.name


class SdkProvider(Provider):
    """A service reached through a vendor SDK made from its API description (`openai`,
    `anthropic`): the SDK client takes headers, timeout and retries alike, its own retries
    are off (`RetryingChatClient` decides), and its answers are pydantic models."""

    named: ClassVar[tuple[str, ...]] = ()
    """Body fields the SDK's create call takes by name; the rest go as `extra_body`."""

    client: Any
    """The SDK's async client, made by the subclass with `connection()`."""

    def connection(self) -> dict[str, Any]:
        """What every SDK client is made with besides its key and base URL."""
        return {"default_headers": dict(self.headers), "timeout": self.timeout, "max_retries": 0}

    @property
    def endpoint(self) -> str:
        return safe_url(str(self.client.base_url), self.hidden())

    @abstractmethod
    def create(self, arguments: dict[str, Any]) -> Awaitable[Any]:
        """The SDK call that sends one request (`client.chat.completions.create`, ...)."""

    async def complete(self, body: dict[str, Any]) -> Any:
        answer = await self.create(sdk_arguments(body, self.named))
        return answer.model_dump() if hasattr(answer, "model_dump") else answer

    async def open_stream(self, body: dict[str, Any]) -> ChunkStream:
        return SdkStream(await self.create(sdk_arguments(body, self.named)))

    async def aclose(self) -> None:
        await self.client.close()
