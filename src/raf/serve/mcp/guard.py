"""Who may talk to `raf mcp serve` over HTTP: a bearer token beyond loopback, and Host and
Origin checks always (so a web page cannot reach the server through DNS rebinding); an
address that keeps sending wrong tokens is refused for a while, as on `raf serve`."""

from __future__ import annotations

import hmac
import math
import socket
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

from raf.core.errors import ConfigurationError
from raf.serve.limits import FailedAuthLimiter, ServeLimits
from raf.serve.security import is_loopback

TOKEN_ENV = "RAF_MCP_TOKEN"
"""The environment variable holding the bearer token clients must send."""

_LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")

Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]


def check_exposure(host: str, token: str | None) -> None:
    """Refuse to listen beyond loopback without a token: anyone who can reach the port
    could otherwise run the agent and its tools."""
    if token is not None and not token.strip():
        raise ConfigurationError(f"${TOKEN_ENV} is set but empty; set a long random token")
    if not is_loopback(host) and not token:
        raise ConfigurationError(
            f"refusing to serve MCP on {host}, beyond this machine, without a bearer token: "
            f"set ${TOKEN_ENV} to a long random value (clients send "
            f"'Authorization: Bearer <token>'), or bind 127.0.0.1"
        )


def allowed_host_names(host: str, extra: Iterable[str] = ()) -> list[str]:
    """The names clients may put in the Host header: loopback, the bound address (and
    this machine's name when bound to every interface), and what the user names."""
    names = [*_LOOPBACK_NAMES, host, *extra]
    if host in ("0.0.0.0", "::", ""):
        names.append(socket.gethostname())
    seen: list[str] = []
    for name in names:
        if name and name not in ("0.0.0.0", "::") and name not in seen:
            seen.append(name)
    return seen


def host_patterns(names: Iterable[str]) -> tuple[list[str], list[str]]:
    """Host and Origin patterns (with any port) for the MCP SDK's transport security."""
    hosts: list[str] = []
    origins: list[str] = []
    for name in names:
        shown = f"[{name}]" if ":" in name and not name.startswith("[") else name
        hosts += [shown, f"{shown}:*"]
        for scheme in ("http", "https"):
            origins += [f"{scheme}://{shown}", f"{scheme}://{shown}:*"]
    return hosts, origins


class BearerTokenGuard:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`;
    a client address that sent `limits.auth_failures` wrong ones is refused (429) before
    its token is looked at, until it has earned a try back."""

    def __init__(self, app: App, token: str, limits: ServeLimits | None = None) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()
        limits = limits or ServeLimits()
        self.auth_failures = FailedAuthLimiter(limits.auth_failures, limits.auth_failure_window)
        """Failed authentications by client address."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)
            return
        client = scope.get("client")
        address = str(client[0]) if client else ""
        barred = self.auth_failures.waiting(address)
        if barred > 0:
            wait = max(1, math.ceil(barred))
            await _refuse(
                send,
                429,
                f"too many failed authentications from this address ({address or 'unknown'}):"
                f" {self.auth_failures.failures} wrong tokens, earned back over "
                f"{self.auth_failures.window:g} s; retry after {wait} s",
                [(b"retry-after", str(wait).encode())],
            )
            return
        sent: bytes | None = None
        for name, value in scope.get("headers", []):
            if name.lower() == b"authorization":
                sent = bytes(value)
                break
        if sent is not None and hmac.compare_digest(sent, self._expected):
            await self.app(scope, receive, send)
            return
        if sent is not None:  # a wrong token, not a missing one, is a guess
            self.auth_failures.failed(address)
        await _refuse(
            send,
            401,
            "a valid bearer token is required (Authorization: Bearer <token>)",
            [(b"www-authenticate", b'Bearer realm="raf-mcp"')],
        )


async def _refuse(
    send: Send, status: int, message: str, headers: list[tuple[bytes, bytes]]
) -> None:
    """A plain-text refusal, as the MCP server's guard answers."""
    body = message.encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain; charset=utf-8"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
