"""What a server lets in: bearer tokens, Host and Origin checks, and a body size limit.

The checks are one plain ASGI middleware in front of every protocol the server speaks,
so a mounted application (A2A) gets them too and streamed responses are not buffered.
"""

from __future__ import annotations

import hmac
import ipaddress
import json
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from raf.core.errors import ConfigurationError
from raf.serve.hosting import owner_of

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

DEFAULT_MAX_BODY = 1024 * 1024
"""Largest request body accepted by default (1 MiB)."""

PUBLIC_PATHS = frozenset({"/health", "/ready"})
"""Paths answered without a token: probes for load balancers (and A2A agent cards)."""

AGENT_CARD = "/.well-known/agent-card.json"
"""A2A agent cards are public: they say how to authenticate."""

OWNER_KEY = "raf_owner"
"""Key in the ASGI scope's state holding the caller's owner id."""


def is_loopback(host: str) -> bool:
    """True for localhost and loopback addresses (IPv4 and IPv6)."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
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
    max_body_bytes: int = DEFAULT_MAX_BODY
    public_paths: frozenset[str] = field(default=PUBLIC_PATHS)

    @classmethod
    def for_bind(
        cls,
        host: str,
        *,
        tokens: tuple[str, ...] | list[str] = (),
        allowed_hosts: tuple[str, ...] | list[str] = (),
        allowed_origins: tuple[str, ...] | list[str] = (),
        max_body_bytes: int = DEFAULT_MAX_BODY,
    ) -> ServeSecurity:
        """Rules for a server bound to `host`; refuses a non-loopback bind without tokens."""
        clean = tuple(t.strip() for t in tokens if t.strip())
        if not is_loopback(host) and not clean:
            raise ConfigurationError(
                f"refusing to serve on {host!r} without a bearer token: anyone who can reach "
                "the address could run the agents; set RAF_SERVE_TOKEN (or --token-file), "
                "or bind to 127.0.0.1"
            )
        if any(len(t) < 16 for t in clean):
            raise ConfigurationError("a bearer token must be at least 16 characters long")
        if max_body_bytes <= 0:
            raise ConfigurationError("the body size limit must be a positive number of bytes")
        return cls(
            bind_host=host,
            tokens=clean,
            allowed_hosts=tuple(h.lower() for h in allowed_hosts),
            allowed_origins=tuple(o.rstrip("/").lower() for o in allowed_origins),
            max_body_bytes=max_body_bytes,
        )

    def is_public(self, path: str) -> bool:
        """Whether `path` is answered without a token."""
        return path in self.public_paths or path.endswith(AGENT_CARD)

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
) -> None:
    """A JSON error response sent straight over ASGI."""
    body = json.dumps({"error": {"code": code, "message": message}}).encode()
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


class SecurityMiddleware:
    """Refuses what `ServeSecurity` does not admit, before any protocol sees it."""

    def __init__(self, app: ASGIApp, security: ServeSecurity) -> None:
        self.app = app
        self.security = security

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        rules = self.security
        if not rules.host_allowed(headers.get("host")):
            await send_json_error(send, 403, "host_not_allowed", "this Host is not served here")
            return
        if not rules.origin_allowed(headers.get("origin")):
            await send_json_error(send, 403, "origin_not_allowed", "this Origin is not allowed")
            return
        owner = rules.owner(headers.get("authorization"))
        if owner is None and not rules.is_public(scope["path"]):
            await send_json_error(
                send,
                401,
                "unauthorized",
                "a valid bearer token is required (Authorization: Bearer <token>)",
                [(b"www-authenticate", b'Bearer realm="raf"')],
            )
            return
        scope.setdefault("state", {})[OWNER_KEY] = owner or ""
        length = headers.get("content-length")
        if length is not None and (not length.isdigit() or int(length) > rules.max_body_bytes):
            await send_json_error(send, 413, "body_too_large", self._too_large())
            return
        body = await self._read_body(receive)
        if body is None:
            await send_json_error(send, 413, "body_too_large", self._too_large())
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)

    def _too_large(self) -> str:
        return f"the request body is larger than {self.security.max_body_bytes} bytes"

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
