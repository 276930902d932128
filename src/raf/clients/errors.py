"""Errors of model clients: each says what failed and what to do, and none shows a key."""

from __future__ import annotations

import base64
import functools
import json
import re
from collections.abc import Iterable, Mapping
from urllib.parse import quote, quote_plus

from raf.clients.truncated_echoes import mask_truncated
from raf.core.errors import ConfigurationError, ModelError


class MissingApiKeyError(ConfigurationError):
    """No API key was given for a provider that needs one."""

    def __init__(self, provider: str, env_var: str) -> None:
        self.provider = provider
        self.env_var = env_var
        super().__init__(
            f"no API key for {provider}: set the {env_var} environment variable or pass "
            f"api_key=...; to run without a key use the embedded model: RAF_MODEL=local"
        )


class ClientError(ModelError):
    """A model call failed in a way a client recognised; carries the provider and model."""

    def __init__(
        self,
        message: str,
        *,
        provider: str = "",
        model: str = "",
        retryable: bool = False,
        status: int | None = None,
        retry_after: float | None = None,
    ) -> None:
        self.provider = provider
        self.model = model
        self.retry_after = retry_after
        """Seconds the server asked to wait before trying again (its Retry-After), if any."""
        self.request_id: str | None = None
        """The id the provider gave the failed request (quote it to its support), if any."""
        super().__init__(message, retryable=retryable, status=status)


class ModelConnectionError(ClientError):
    """The server could not be reached: wrong base URL, refused or reset connection."""


class RequestTimeoutError(ClientError):
    """The server did not answer within the per-request timeout."""


class RateLimitError(ClientError):
    """The provider refused the request for now (HTTP 429); `retry_after` in seconds."""

    def __init__(
        self,
        message: str,
        *,
        retry_after: float | None = None,
        provider: str = "",
        model: str = "",
        retryable: bool = True,
        status: int | None = 429,
    ) -> None:
        super().__init__(
            message,
            provider=provider,
            model=model,
            retryable=retryable,
            status=status,
            retry_after=retry_after,
        )


class ServerError(ClientError):
    """The provider failed on its side (HTTP 5xx)."""


class AuthenticationError(ClientError):
    """The API key was refused (HTTP 401/403)."""


class ModelNotFoundError(ClientError):
    """The server does not know the model (HTTP 404)."""


class ContextOverflowError(ClientError):
    """The conversation is longer than the model's context window."""


class BadRequestError(ClientError):
    """The provider refused the request as malformed (other HTTP 4xx)."""


class InvalidResponseError(ClientError):
    """The server answered with something that is not the protocol (for example bad JSON)."""


class StreamInterruptedError(ClientError):
    """A streamed response broke off after part of it had arrived; nothing of it is kept."""


_KEY_PATTERNS = (
    # a key echoed cut short: its start, a cut mark (stars, dots, an ellipsis), its end
    re.compile(r"sk-[A-Za-z0-9_\-]*(?:[*\u2026\u2022]|\.\.)[*.\u2026\u2022A-Za-z0-9_\-]*"),
    re.compile(r"sk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)(bearer\s+)[A-Za-z0-9_\-.=]{8,}"),
    re.compile(
        r"(?i)((?:api[_-]?key|x-api-key|authorization)[\"']?\s*[:=]\s*[\"']?)[^\s\"',}]{6,}"
    ),
)


_SPLITS = r"(?:[\s\u200b-\u200d\u2060\ufeff\"'+,]|\\{1,3}[nrt]){0,5}"
"""What may stand between the characters of a secret split across lines, chunks or
concatenated strings: whitespace, zero-width characters, quotes, plus signs, commas, and
a line break or tab as JSON text writes it (`\\n`, also escaped once more)."""


def _base64_cores(value: bytes) -> list[str]:
    """The parts of the base64 encodings of `value` that do not depend on what stands
    around it, for each of the three alignments it can have in a longer text, in the
    standard and URL-safe alphabets (a key inside `Basic user:key` is encoded at an
    offset)."""
    cores: list[str] = []
    for offset in range(3):
        encoded = base64.b64encode(b"\0" * offset + value).decode("ascii")
        start = 4 if offset else 0  # the first group mixes in the bytes before it
        end = 4 * ((offset + len(value)) // 3)  # a last partial group mixes in what follows
        core = encoded[start:end]
        if len(core) >= 8:
            cores += [core, core.replace("+", "-").replace("/", "_")]
    return cores


def _json_forms(secret: str) -> list[str]:
    """`secret` as JSON text writes it inside a string (a line break as `\\n`, a quote as
    `\\"`, other characters as `\\u` escapes), and as JSON inside JSON writes it again."""
    once = json.dumps(secret)[1:-1]
    forms = [once, json.dumps(secret, ensure_ascii=False)[1:-1]]
    forms.append(json.dumps(once)[1:-1])
    return forms


def secret_forms(secret: str) -> list[str]:
    """The ways a secret shows up in text that raf recognises: as it is, JSON-escaped
    (once or twice), base64 (any alignment, both alphabets), hex, and URL-encoded.
    `redact` matches each of them ignoring case."""
    raw = secret.encode("utf-8")
    forms = [secret, raw.hex(), quote(secret, safe=""), quote_plus(secret)]
    forms += _json_forms(secret)
    forms += _base64_cores(raw)
    return sorted({form for form in forms if len(form) >= 4}, key=len, reverse=True)


def _char_pattern(char: str) -> str:
    """A character of a secret as it reads in text: itself, or its JSON escape (`\\n`
    for a line break, once or twice escaped)."""
    escaped = json.dumps(char)[1:-1]
    if escaped == char:
        return re.escape(char)
    return f"(?:{re.escape(char)}|\\\\{{0,2}}{re.escape(escaped)})"


@functools.lru_cache(maxsize=64)
def _secrets_pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    alternatives: list[str] = []
    for secret in secrets:
        forms = secret_forms(secret)
        alternatives += [re.escape(form) for form in forms]
        if len(secret) >= 8:  # split: its characters with a few separators between them
            alternatives.append(_SPLITS.join(_char_pattern(char) for char in secret))
    if not alternatives:
        return None
    return re.compile("|".join(alternatives), re.IGNORECASE)


def redact(text: str, secrets: Iterable[str | None] = ()) -> str:
    """`text` with the given secrets and anything shaped like an API key replaced.

    A known secret is found in the forms `secret_forms` lists, in any case (a key echoed
    upper-cased, base64-encoded or URL-encoded), and split by whitespace, zero-width
    characters, quotes or JSON's `\\n` (a key broken across lines or joined from
    chunks), and cut short (`mask_truncated`: its start or end beside a cut mark)."""
    known = tuple(sorted({s for s in secrets if s and len(s) >= 4}))
    pattern = _secrets_pattern(known) if known else None
    if pattern is not None:
        escaped = [form for secret in known for form in _json_forms(secret)]
        text = mask_truncated(pattern.sub("***", text), {*known, *escaped})
    for key_pattern in _KEY_PATTERNS:
        if key_pattern.groups:
            text = key_pattern.sub(lambda m: f"{m.group(1)}***", text)
        else:
            text = key_pattern.sub("***", text)
    return text


_USERINFO = re.compile(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@")
_AUTH_HEADER_WORDS = ("key", "auth", "token", "secret", "password")


def safe_url(url: str | None, secrets: Iterable[str | None] = ()) -> str:
    """A URL fit for messages: no `user:password@`, no key-like query values."""
    return redact(_USERINFO.sub(r"\1", url or ""), secrets)


def header_secrets(headers: Mapping[str, str] | None) -> list[str]:
    """Values of headers that carry credentials (`api-key`, `Authorization`, ...)."""
    return [
        value
        for name, value in (headers or {}).items()
        if any(word in name.lower() for word in _AUTH_HEADER_WORDS)
    ]


def mask_key(key: str | None) -> str:
    """How a key appears in a repr: whether it is set, never its characters."""
    return "set" if key else "unset"


_OVERFLOW_HINTS = (
    "context length",
    "context_length",
    "context window",
    "maximum context",
    "too many tokens",
    "prompt is too long",
    "exceeds the context",
    "input is too long",
    "context_length_exceeded",
    "context size",  # llama.cpp's server: "exceeds the available context size"
    "exceed_context_size",
    "maximum number of tokens",
)
_UNKNOWN_MODEL_HINTS = (
    "not found",
    "not_found",
    "not exist",
    "does not exist",
    "not a valid model",
    "unknown model",
    "invalid model",
    "no such model",
)


def is_context_overflow(message: str) -> bool:
    """Whether a provider's error text says the prompt did not fit."""
    lowered = message.lower()
    return any(hint in lowered for hint in _OVERFLOW_HINTS)


def is_unknown_model(message: str) -> bool:
    """Whether a provider's error text says it does not know the model (some answer 400)."""
    lowered = message.lower()
    return "model" in lowered and any(hint in lowered for hint in _UNKNOWN_MODEL_HINTS)


def error_for_status(
    status: int,
    detail: str,
    *,
    provider: str,
    model: str,
    base_url: str = "",
    retry_after: float | None = None,
    secrets: Iterable[str | None] = (),
    request_id: str | None = None,
) -> ClientError:
    """The error that fits an HTTP status, with advice; `detail` is redacted first; the
    provider's request id, when it sent one, is kept on the error and in its message."""
    error = _status_error(
        status,
        detail,
        provider=provider,
        model=model,
        base_url=base_url,
        retry_after=retry_after,
        secrets=secrets,
    )
    if request_id:
        error.request_id = request_id
        error.args = (f"{error.args[0]} (request id {request_id})", *error.args[1:])
    return error


def _status_error(
    status: int,
    detail: str,
    *,
    provider: str,
    model: str,
    base_url: str,
    retry_after: float | None,
    secrets: Iterable[str | None],
) -> ClientError:
    secrets = list(secrets)
    detail = redact(detail, secrets)[:500]
    where = f"{provider} model {model!r}" + (
        f" at {safe_url(base_url, secrets)}" if base_url else ""
    )
    if status == 429:
        wait = f" (the server asks to wait {retry_after:g}s)" if retry_after is not None else ""
        return RateLimitError(
            f"{where} is rate limited{wait}: {detail}; wrap the client in "
            "RetryingChatClient, or lower the request rate",
            retry_after=retry_after,
            provider=provider,
            model=model,
        )
    if status >= 500:
        return ServerError(
            f"{where} failed on the server (HTTP {status}): {detail}; this is usually "
            "temporary, retry later (RetryingChatClient does so)",
            retryable=True,
            provider=provider,
            model=model,
            status=status,
            retry_after=retry_after,
        )
    if status in (401, 403):
        return AuthenticationError(
            f"{where} refused the API key (HTTP {status}): {detail}; check the key and that "
            "it may use this model",
            provider=provider,
            model=model,
            status=status,
        )
    unknown = status in (400, 422) and is_unknown_model(detail) and not is_context_overflow(detail)
    if status == 404 or unknown:
        return ModelNotFoundError(
            f"{where} was not found (HTTP {status}): {detail}; check the model name (list the "
            "provider's models) and the base URL",
            provider=provider,
            model=model,
            status=status,
        )
    if status in (408,):
        return RequestTimeoutError(
            f"{where} timed out on the server (HTTP 408): {detail}",
            retryable=True,
            provider=provider,
            model=model,
            status=status,
        )
    if is_context_overflow(detail) or status == 413:
        return ContextOverflowError(
            f"{where}: the conversation does not fit the model's context window "
            f"(HTTP {status}): {detail}; shorten the history (a compaction context provider), "
            "lower max_tokens, or use a model with a larger context",
            provider=provider,
            model=model,
            status=status,
        )
    return BadRequestError(
        f"{where} refused the request (HTTP {status}): {detail}",
        provider=provider,
        model=model,
        status=status,
    )


def connection_error(
    provider: str,
    model: str,
    base_url: str,
    cause: BaseException,
    secrets: Iterable[str | None] = (),
) -> ModelConnectionError:
    """A refused or reset connection, naming the URL to check."""
    secrets = list(secrets)
    reason = redact(str(cause) or type(cause).__name__, secrets)
    where = safe_url(base_url, secrets) or "the default endpoint"
    return ModelConnectionError(
        f"cannot reach {provider} at {where} for model "
        f"{model!r}: {reason}; check the base URL and that the server is running",
        provider=provider,
        model=model,
        retryable=True,
    )


def timeout_error(provider: str, model: str, timeout: float | None) -> RequestTimeoutError:
    """A request that ran past its timeout."""
    limit = f" within {timeout:g}s" if timeout is not None else ""
    return RequestTimeoutError(
        f"{provider} model {model!r} did not answer{limit}; raise the timeout "
        "(timeout=...) or retry (RetryingChatClient)",
        provider=provider,
        model=model,
        retryable=True,
    )


def stream_interrupted(
    provider: str, model: str, cause: BaseException, secrets: Iterable[str | None] = ()
) -> StreamInterruptedError:
    """A stream that broke after some data arrived."""
    return StreamInterruptedError(
        f"the stream from {provider} model {model!r} broke off: "
        f"{redact(str(cause) or type(cause).__name__, secrets)}; nothing of this response was "
        "kept, run the request again",
        provider=provider,
        model=model,
    )


def parse_retry_after(value: str | None) -> float | None:
    """Seconds from a Retry-After header (delta seconds or an HTTP date)."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    from datetime import UTC, datetime

    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def transport_kind(exc: BaseException) -> str | None:
    """`"timeout"` or `"connection"` for an HTTP transport error (httpx and its forks)."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    module = type(exc).__module__
    if not module.startswith("httpx") and not isinstance(exc, (ConnectionError, TimeoutError)):
        return None
    if "TimeoutException" in names or isinstance(exc, TimeoutError):
        return "timeout"
    if "TransportError" in names or isinstance(exc, ConnectionError):
        return "connection"
    return None


class Secret:
    """A value (an API key) that never shows itself in a repr, str or log line."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __bool__(self) -> bool:
        return bool(self._value)

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__
