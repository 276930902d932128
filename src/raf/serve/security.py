"""What a server lets in: bearer tokens, Host and Origin checks, JSON bodies of Unicode
text only, and the request limits of `ServeLimits` (body size, time and depth, rate,
streams at once).

The checks are one plain ASGI middleware in front of every protocol the server speaks,
so a mounted application (A2A) gets them too and streamed responses are not buffered.
Its refusals have raf's error shape, and OpenAI's on the OpenAI-compatible API (`/v1`).
"""

from __future__ import annotations

import asyncio
import functools
import hmac
import ipaddress
import json
import math
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any
from urllib.parse import urlsplit

from raf.core.errors import ConfigurationError
from raf.serve.a2a.requests import is_rpc_path, jsonrpc_error_body
from raf.serve.errors import ServeError, openai_body
from raf.serve.limits import (
    DEFAULT_MAX_BODY,
    FailedAuthLimiter,
    RateLimiter,
    ServeLimits,
    json_too_deep,
)
from raf.serve.requests import body_text
from raf.serve.tenancy import owner_of

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

__all__ = ["DEFAULT_MAX_BODY", "SecurityMiddleware", "ServeSecurity", "is_loopback"]

PUBLIC_PATHS = frozenset({"/health", "/ready"})
"""Paths answered without a token: probes for load balancers (and A2A agent cards)."""

AGENT_CARD = "/.well-known/agent-card.json"
"""A2A agent cards are public: they say how to authenticate."""

OLD_AGENT_CARD = "/.well-known/agent.json"
"""The card's older path (0.3's card), public as well."""

OWNER_KEY = "raf_owner"
"""Key in the ASGI scope's state holding the caller's owner id."""


def owner_of_request(scope: MutableMapping[str, Any]) -> str:
    """The caller's owner id, as `SecurityMiddleware` put it in the request's scope."""
    return str(scope.get("state", {}).get(OWNER_KEY, ""))


OPENAI_PREFIX = "/v1/"
"""Where the OpenAI-compatible API answers: refusals there have OpenAI's error shape."""


@functools.lru_cache(maxsize=1024)
def is_loopback(host: str) -> bool:
    """True for `localhost` and loopback addresses (IPv4 and IPv6): the one test of
    loopback for every server here (`raf serve` and `raf mcp serve` share this guard).

    Other names under `.localhost` (`app.localhost`) are not loopback here: they reach
    this machine only where the resolver keeps them off DNS, and where it does not,
    whoever answers for them may name a public address, so a server bound to one without
    tokens could be reached from beyond this machine. Name such a host in `allowed_hosts` to
    accept it. Remembered for the last 1 024 names: every request asks it of its Host,
    its client address and the server's own address, and parsing an address costs more
    than the rest of the check."""
    name = host.strip().strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def _host_name(value: str) -> str:
    """The name part of a Host header (`[::1]:8000` → `::1`, `a.b:80` → `a.b`)."""
    value = value.strip().lower()
    if value.startswith("["):
        return value[1 : value.find("]")] if "]" in value else value
    return value.rsplit(":", 1)[0] if value.count(":") == 1 else value


@dataclass(kw_only=True, slots=True)
class ServeSecurity:
    """The server's admission rules; build with `ServeSecurity.for_bind`."""

    bind_host: str = "127.0.0.1"
    """The address the server listens on: decides the defaults below."""
    tokens: tuple[str, ...] = ()
    """Bearer tokens accepted; each token sees only the sessions it created."""
    allowed_hosts: tuple[str, ...] = ()
    """Host header names accepted; empty means loopback names when bound to loopback,
    any name otherwise (the token is the guard there)."""
    allowed_origins: tuple[str, ...] = ()
    """Browser origins accepted besides loopback ones on a loopback server."""
    limits: ServeLimits = field(default_factory=ServeLimits)
    """Timeouts, sizes, depth, rate and connection limits."""
    public_paths: frozenset[str] = field(default=PUBLIC_PATHS)

    @property
    def max_body_bytes(self) -> int:
        """Largest request body accepted (`limits.max_body_bytes`)."""
        return self.limits.max_body_bytes

    @classmethod
    def for_bind(
        cls,
        host: str,
        *,
        tokens: tuple[str, ...] | list[str] = (),
        allowed_hosts: tuple[str, ...] | list[str] = (),
        allowed_origins: tuple[str, ...] | list[str] = (),
        max_body_bytes: int | None = None,
        limits: ServeLimits | None = None,
        token_source: str = "RAF_SERVE_TOKEN (or --token-file)",
    ) -> ServeSecurity:
        """Rules for a server bound to `host`; refuses a non-loopback bind without tokens
        (the refusal tells to set `token_source`). `max_body_bytes`, when given, replaces
        the one in `limits`."""
        clean = tuple(t.strip() for t in tokens if t.strip())
        if not is_loopback(host) and not clean:
            raise ConfigurationError(
                f"refusing to serve on {host!r} without a bearer token: anyone who can reach "
                f"the address could run the agents; set {token_source}, or bind to 127.0.0.1"
            )
        if any(len(t) < 16 for t in clean):
            raise ConfigurationError("a bearer token must be at least 16 characters long")
        limits = limits or ServeLimits()
        if max_body_bytes is not None:
            if max_body_bytes <= 0:
                raise ConfigurationError("the body size limit must be a positive number of bytes")
            limits = replace(limits, max_body_bytes=max_body_bytes)
        return cls(
            bind_host=host,
            tokens=clean,
            allowed_hosts=tuple(h.lower() for h in allowed_hosts),
            allowed_origins=tuple(o.rstrip("/").lower() for o in allowed_origins),
            limits=limits,
        )

    def is_public(self, path: str) -> bool:
        """Whether `path` is answered without a token."""
        return path in self.public_paths or path.endswith((AGENT_CARD, OLD_AGENT_CARD))

    def host_allowed(self, header: str | None) -> bool:
        """Whether a request's Host header may reach this server (DNS rebinding guard)."""
        if header is None:
            return False
        name = _host_name(header)
        if self.allowed_hosts:
            return name in self.allowed_hosts
        if is_loopback(self.bind_host):
            return is_loopback(name)
        return True

    def origin_allowed(self, origin: str | None) -> bool:
        """Requests without an Origin are not from browsers; those with one must match."""
        if origin is None:
            return True
        origin = origin.rstrip("/").lower()
        if origin in self.allowed_origins:
            return True
        hostname = urlsplit(origin).hostname or ""
        return is_loopback(self.bind_host) and is_loopback(hostname)

    def owner(self, authorization: str | None) -> str | None:
        """The owner id of the caller, or None when the token is missing or wrong."""
        if not self.tokens:
            return owner_of(None)
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            return None
        for known in self.tokens:
            if hmac.compare_digest(known.encode(), token.encode()):
                return owner_of(known)
        return None


async def send_json_error(
    send: Send,
    status: int,
    code: str,
    message: str,
    headers: Sequence[tuple[bytes, bytes]] = (),
    *,
    openai: bool = False,
    jsonrpc: bool = False,
) -> None:
    """A JSON error response sent straight over ASGI, in raf's error shape, in the one
    OpenAI clients read when `openai`, or as a JSON-RPC error when `jsonrpc` (an A2A
    endpoint's URL)."""
    if openai:
        shaped = openai_body(status, code, message)
    elif jsonrpc:
        shaped = jsonrpc_error_body(status, code, message)
    else:
        shaped = {"error": {"code": code, "message": message}}
    body = json.dumps(shaped).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


UNSAFE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
"""Methods that change something: a browser sends some of them cross-origin without
asking first unless the body is declared JSON."""


def is_json(content_type: str | None) -> bool:
    """Whether a Content-Type header names JSON (`application/json`, `…+json`)."""
    if content_type is None:
        return False
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


def client_address(scope: Scope) -> str:
    """The client's address as the server saw it (a trusted local proxy's
    X-Forwarded-For already applied), or "" when the server was not told."""
    client = scope.get("client")
    return str(client[0]) if client else ""


_READ_HEADERS = {
    name.encode(): name
    for name in (
        "host",
        "origin",
        "authorization",
        "content-length",
        "content-type",
        "transfer-encoding",
    )
}
"""The request headers the checks read, by their bytes in an ASGI scope."""


def read_headers(raw: Sequence[tuple[bytes, bytes]]) -> dict[str, str]:
    """The headers the checks read, by lower-case name (the last of a repeated one);
    the others are left as they came, undecoded."""
    found: dict[str, str] = {}
    for key, value in raw:
        name = _READ_HEADERS.get(key) or _READ_HEADERS.get(key.lower())
        if name is not None:
            found[name] = value.decode("latin-1")
    return found


class SecurityMiddleware:
    """Refuses what `ServeSecurity` does not admit, before any protocol sees it.

    Rate limits: a server with tokens keys callers by token, wherever a token is used
    from (one token spread over many addresses is still one caller, and clients behind
    one proxy address are not lumped together); a server without tokens, which listens
    on loopback only, keys them by client address, so one noisy address does not use up
    the others' budget. There, loopback addresses have `loopback_rate_per_second`, by
    default unlimited (the developer's own machine); other addresses (sent by a local
    proxy as X-Forwarded-For) have `rate_per_second`.

    Stream slots: one caller (keyed as for rates; loopback addresses on a server without
    tokens are not counted apart) holds at most `streams_per_caller` of `max_streams`,
    so one token cannot take every slot. Failed authentication: on a server with tokens,
    an address that sent `auth_failures` wrong tokens is refused before its next token
    is looked at, until it has earned a try back."""

    def __init__(self, app: ASGIApp, security: ServeSecurity) -> None:
        self.app = app
        self.security = security
        self.limits = security.limits
        limits = self.limits
        self.rates = RateLimiter(limits.rate_per_second, limits.rate_burst)
        """Buckets by token (with tokens) or by non-loopback address (without)."""
        self.loopback_rates = RateLimiter(limits.loopback_rate_per_second, limits.rate_burst)
        """Buckets by loopback address on a server without tokens."""
        self.streams = 0
        """Requests being answered now (health probes and page files not counted)."""
        self.held: dict[str, int] = {}
        """Requests being answered now by caller (see `_stream_holder`); only callers
        with one in flight are kept, so it never holds more than `max_streams` keys."""
        self.auth_failures = FailedAuthLimiter(limits.auth_failures, limits.auth_failure_window)
        """Failed authentications by client address."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = read_headers(scope["headers"])
        rules = self.security
        limits = self.limits
        path = str(scope.get("path", ""))
        openai = path.startswith(OPENAI_PREFIX)
        jsonrpc = is_rpc_path(path)

        async def refuse(
            status: int, code: str, message: str, extra: Sequence[tuple[bytes, bytes]] = ()
        ) -> None:
            await send_json_error(
                send, status, code, message, extra, openai=openai, jsonrpc=jsonrpc
            )

        if not rules.host_allowed(headers.get("host")):
            await refuse(403, "host_not_allowed", "this Host is not served here")
            return
        if not rules.origin_allowed(headers.get("origin")):
            await refuse(403, "origin_not_allowed", "this Origin is not allowed")
            return
        public = rules.is_public(scope["path"])
        address = client_address(scope)
        if not public and rules.tokens:
            barred = self.auth_failures.waiting(address)
            if barred > 0:
                await refuse(
                    429,
                    "too_many_auth_failures",
                    self._barred(address, barred),
                    [(b"retry-after", str(max(1, math.ceil(barred))).encode())],
                )
                return
        owner = rules.owner(headers.get("authorization"))
        if owner is None and not public:
            if "authorization" in headers:  # a wrong token, not a missing one, is a guess
                self.auth_failures.failed(address)
            await refuse(
                401,
                "unauthorized",
                "a valid bearer token is required (Authorization: Bearer <token>)",
                [(b"www-authenticate", b'Bearer realm="raf"')],
            )
            return
        scope.setdefault("state", {})[OWNER_KEY] = owner or ""
        if not public:
            limited = self._rate_limited(owner or "", address)
            if limited is not None:
                wait, message = limited
                await refuse(
                    429,
                    "rate_limited",
                    message,
                    [(b"retry-after", str(max(1, math.ceil(wait))).encode())],
                )
                return
        if await self._refuse_content(scope, headers, refuse):
            return
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > limits.max_body_bytes):
            await refuse(413, "body_too_large", self._too_large())
            return
        try:
            async with asyncio.timeout(limits.body_timeout):
                body = await self._read_body(receive)
        except TimeoutError:
            await refuse(
                408,
                "body_timeout",
                f"the request body did not arrive within {limits.body_timeout:g} s "
                "(--body-timeout)",
                [(b"connection", b"close")],
            )
            return
        if body is None:
            await refuse(413, "body_too_large", self._too_large())
            return
        if body and json_too_deep(body, limits.max_json_depth):
            await refuse(
                400,
                "json_too_deep",
                f"the JSON body nests arrays and objects deeper than {limits.max_json_depth} "
                "levels (--max-json-depth)",
            )
            return
        if body:
            # every protocol gets only Unicode text: a lone surrogate parsed into a string
            # fails later, wherever that string is encoded, as a 500
            try:
                body_text(body)
            except ServeError as exc:
                await refuse(exc.status, exc.code, exc.message)
                return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        if public:
            await self.app(scope, replay, send)
            return
        holder = self._stream_holder(owner or "", address)
        if holder is not None and self.held.get(holder, 0) >= limits.streams_per_caller:
            await refuse(
                429,
                "too_many_streams",
                self._over_share(address),
                [(b"retry-after", b"1")],
            )
            return
        if self.streams >= limits.max_streams:
            await refuse(
                503,
                "server_busy",
                f"the server is answering {limits.max_streams} requests already, its limit "
                f"(--max-streams {limits.max_streams}); retry soon, or raise --max-streams",
                [(b"retry-after", b"1")],
            )
            return
        self.streams += 1
        if holder is not None:
            self.held[holder] = self.held.get(holder, 0) + 1
        try:
            await self.app(scope, replay, send)
        finally:
            self.streams -= 1
            if holder is not None:
                left = self.held.pop(holder) - 1
                if left:
                    self.held[holder] = left

    def _stream_holder(self, owner: str, address: str) -> str | None:
        """Whose share of the stream slots a request counts against: its token on a
        server with tokens, its address on one without, none for a loopback address
        there (the developer's own machine has every slot, as it has every request)."""
        if self.security.tokens:
            return owner
        return None if is_loopback(address) else address

    def _over_share(self, address: str) -> str:
        """Why a caller holding its share of the stream slots is refused one more."""
        limits = self.limits
        who = "this token" if self.security.tokens else f"this address ({address or 'unknown'})"
        return (
            f"{who} has {limits.streams_per_caller} requests being answered already, the "
            f"most one caller may hold (--stream-share {limits.stream_share:g} of "
            f"--max-streams {limits.max_streams}); retry when one has ended, or raise "
            "--stream-share"
        )

    def _barred(self, address: str, wait: float) -> str:
        """Why an address that sent too many wrong tokens is refused."""
        limits = self.limits
        return (
            f"too many failed authentications from this address ({address or 'unknown'}): "
            f"the limit is --auth-failures {limits.auth_failures} wrong tokens, earned back "
            f"over --auth-failure-window {limits.auth_failure_window:g} s; retry after "
            f"{math.ceil(wait)} s"
        )

    def _rate_limited(self, owner: str, address: str) -> tuple[float, str] | None:
        """Seconds this caller must wait and a message naming the limit it is over and
        the flags that set it, or None when it may go on (see the class's rule)."""
        limits = self.limits
        if self.security.tokens:
            wait = self.rates.wait(owner)
            who, rate, flag = "this token", limits.rate_per_second, "--rate-limit"
            scope = "the limit per token"
        elif is_loopback(address):
            wait = self.loopback_rates.wait(address)
            who, rate = f"this address ({address})", limits.loopback_rate_per_second
            flag, scope = "--loopback-rate-limit", "the limit per loopback address"
        else:
            wait = self.rates.wait(address)
            who, rate = f"this address ({address or 'unknown'})", limits.rate_per_second
            flag, scope = "--rate-limit", "the limit per address"
        if wait <= 0:
            return None
        return wait, (
            f"more than {rate:g} requests a second (bursts of {limits.rate_burst}) from "
            f"{who}: {scope} is {flag} {rate:g} --rate-burst {limits.rate_burst}; retry "
            f"after {wait:.2f} s, or raise them"
        )

    async def _refuse_content(
        self,
        scope: Scope,
        headers: dict[str, str],
        refuse: Callable[[int, str, str], Awaitable[None]],
    ) -> bool:
        """Refuse (415) a body that is not declared JSON, and a browser's unsafe request
        that does not declare JSON: only those does a browser send cross-origin without
        a preflight, which this server never grants."""
        if scope["method"] not in UNSAFE_METHODS or is_json(headers.get("content-type")):
            return False
        length = headers.get("content-length")
        has_body = "transfer-encoding" in headers or (length is not None and length != "0")
        if not has_body and "origin" not in headers:
            return False
        await refuse(
            415,
            "unsupported_media_type",
            "send the request as JSON (Content-Type: application/json)"
            + ("" if has_body else ": a browser's request must declare it"),
        )
        return True

    def _too_large(self) -> str:
        return f"the request body is larger than {self.security.max_body_bytes} bytes (--max-body)"

    async def _read_body(self, receive: Receive) -> bytes | None:
        """The whole body, or None once it passes the limit (chunked uploads included)."""
        chunks: list[bytes] = []
        size = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return b"".join(chunks)
            chunk = bytes(message.get("body", b""))
            size += len(chunk)
            if size > self.security.max_body_bytes:
                return None
            chunks.append(chunk)
            if not message.get("more_body", False):
                return b"".join(chunks)
