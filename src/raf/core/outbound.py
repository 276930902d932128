"""The one guard every outbound HTTP request of raf passes (web tools, OpenAPI documents
and operations, HTTP actions of workflows, MCP servers and their OAuth discovery, JSON
Schema refs a user allowed): it resolves the host, checks every address, and connects to
the very address it checked, on every redirect hop.

The rule: http and https only, no credentials in the URL, and every address the host
resolves to must be public, unless the host is one the user listed (`allow_hosts`), the
request goes to an origin the user wrote in configuration (`trusted_origins`: a
configured base URL, spec URL or server URL, with its scheme, host and port), or the
user turned the check off for that fetcher (`allow_private`). A URL that came from a
conversation, from inside a fetched document or from a redirect never becomes trusted;
it is judged by the same rule on each hop. The connection goes to the checked address
(the Host header and TLS server name keep the host), so DNS rebinding cannot slip
another address in between check and use.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from raf.core.errors import RafError

RESOLVE_TIMEOUT = 10.0
"""Seconds a host name may take to resolve."""


class OutboundRefused(RafError):
    """A URL, a redirect hop or an address the outbound guard does not allow."""


def origin_of(url: str) -> str:
    """`scheme://host:port` of an http(s) URL (the default port written out), lowercase;
    empty when the URL is not one."""
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return ""
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return ""
    port = port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname.lower()
    shown = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{shown}:{port}"


@dataclass(frozen=True, kw_only=True, slots=True)
class OutboundPolicy:
    """What one fetcher may reach besides public addresses."""

    allow_private: bool = False
    """Reach any address (loopback, private, link-local) from any URL."""
    allow_hosts: frozenset[str] = frozenset()
    """Host names (lowercase) the user listed: reached whatever their addresses."""
    trusted_origins: frozenset[str] = frozenset()
    """Origins (`origin_of`) the user wrote in configuration: reached whatever their
    addresses; a redirect elsewhere is judged on its own."""
    who: str = "raf"
    """Names the fetcher in refusals."""

    def trusting(self, *urls: str | None) -> OutboundPolicy:
        """This policy, also trusting the origins of `urls` (URLs the user wrote)."""
        added = {origin_of(u) for u in urls if u}
        return replace(self, trusted_origins=self.trusted_origins | (added - {""}))

    def allows_private(self, url: str, host: str) -> bool:
        return (
            self.allow_private
            or host.lower() in self.allow_hosts
            or origin_of(url) in self.trusted_origins
        )


def policy(
    *,
    who: str = "raf",
    allow_private: bool = False,
    allow_hosts: Iterable[str] = (),
    trusted: Sequence[str | None] = (),
) -> OutboundPolicy:
    """An `OutboundPolicy` from the options a user gives a fetcher."""
    base = OutboundPolicy(
        who=who,
        allow_private=allow_private,
        allow_hosts=frozenset(h.lower() for h in allow_hosts),
    )
    return base.trusting(*trusted)


def check_address(ip: str, *, allow_private: bool, who: str = "raf") -> None:
    """Refuse loopback, private, link-local, multicast, reserved and unspecified addresses
    (unless `allow_private`); 6to4 and Teredo addresses are judged by the IPv4 address
    they carry, which a relay would reach (a 6to4 address by it alone: Python before
    3.11.10 counts all of 2002::/16 as private, later ones none of it)."""
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if allow_private:
        return
    if isinstance(addr, ipaddress.IPv6Address):
        if addr.teredo is not None:
            check_address(str(addr.teredo[1]), allow_private=False, who=who)
        if addr.sixtofour is not None:
            check_address(str(addr.sixtofour), allow_private=False, who=who)
            return
    if not addr.is_global or addr.is_multicast or addr.is_reserved or addr.is_unspecified:
        raise OutboundRefused(
            f"address {addr} is private, loopback or link-local; {who} refuses it (SSRF "
            "protection: list the host in allow_hosts, or configure this URL yourself, to "
            "reach it)"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class CheckedTarget:
    """A URL whose every address passed the guard, and where to connect for it."""

    url: str
    host: str
    ip: str
    connect_url: str
    """The URL with the checked address in place of the host."""
    addresses: tuple[str, ...] = field(default=())


def _parts(url: str, who: str) -> tuple[Any, str, int]:
    try:
        parts = urlsplit(url)
        given_port = parts.port
    except ValueError as exc:
        raise OutboundRefused(f"{url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise OutboundRefused(f"{who} fetches only http and https URLs, not {parts.scheme!r}")
    host = parts.hostname
    if not host:
        raise OutboundRefused(f"{url!r} has no host")
    if parts.username or parts.password:
        raise OutboundRefused(f"{who} refuses URLs with credentials")
    return parts, host, given_port or (443 if parts.scheme == "https" else 80)


def _target(
    url: str, rule: OutboundPolicy, parts: Any, host: str, port: int, infos: Any
) -> CheckedTarget:
    ips = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not ips:
        raise OutboundRefused(f"{host!r} has no address")
    allowed = rule.allows_private(url, host)
    for ip in ips:  # every address must pass, or a rebinding resolver could pick another
        check_address(ip, allow_private=allowed, who=rule.who)
    ip = ips[0]
    shown = f"[{ip}]" if ":" in ip else ip
    connect_url = urlunsplit((parts.scheme, f"{shown}:{port}", parts.path or "/", parts.query, ""))
    return CheckedTarget(url=url, host=host, ip=ip, connect_url=connect_url, addresses=tuple(ips))


async def check_url(url: str, rule: OutboundPolicy) -> CheckedTarget:
    """Resolve `url`'s host and check every address against `rule` (event loop)."""
    parts, host, port = _parts(url, rule.who)
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout=RESOLVE_TIMEOUT
        )
    except (OSError, TimeoutError) as exc:
        raise OutboundRefused(f"cannot resolve {host!r}: {exc}") from None
    return _target(url, rule, parts, host, port, infos)


def check_url_blocking(url: str, rule: OutboundPolicy) -> CheckedTarget:
    """`check_url` for code outside an event loop (a thread, a synchronous callback)."""
    parts, host, port = _parts(url, rule.who)
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as exc:
        raise OutboundRefused(f"cannot resolve {host!r}: {exc}") from None
    return _target(url, rule, parts, host, port, infos)


def _pinned(request: Any, target: CheckedTarget) -> Any:
    """`request` sent to the checked address, keeping its Host header and TLS name."""
    request.url = request.url.copy_with(host=target.ip)
    request.extensions = {**request.extensions, "sni_hostname": target.host}
    return request


@cache
def _transport_classes(module_name: str) -> tuple[type[Any], type[Any]]:
    """The guarded transports (async and blocking) for an httpx-compatible module (raf
    uses httpx; the MCP SDK uses its fork httpx2)."""
    import importlib

    module = importlib.import_module(module_name)

    class GuardedAsyncTransport(module.AsyncBaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self, rule: OutboundPolicy, inner: Any) -> None:
            self.rule = rule
            self.inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            try:
                target = await check_url(str(request.url), self.rule)
            except OutboundRefused as exc:
                raise module.ConnectError(str(exc), request=request) from exc
            return await self.inner.handle_async_request(_pinned(request, target))

        async def aclose(self) -> None:
            await self.inner.aclose()

    class GuardedTransport(module.BaseTransport):  # type: ignore[name-defined,misc]
        def __init__(self, rule: OutboundPolicy, inner: Any) -> None:
            self.rule = rule
            self.inner = inner

        def handle_request(self, request: Any) -> Any:
            try:
                target = check_url_blocking(str(request.url), self.rule)
            except OutboundRefused as exc:
                raise module.ConnectError(str(exc), request=request) from exc
            return self.inner.handle_request(_pinned(request, target))

        def close(self) -> None:
            self.inner.close()

    return GuardedAsyncTransport, GuardedTransport


def guarded_async_client(rule: OutboundPolicy, *, module: str = "httpx", **options: Any) -> Any:
    """An `AsyncClient` (of httpx, or of the httpx-compatible `module`) whose every
    request, redirect hops included, passes the guard; proxies from the environment are
    not used, since a proxy would connect to an address the guard never saw."""
    import importlib

    http = importlib.import_module(module)
    async_cls, _ = _transport_classes(module)
    transport = async_cls(rule, http.AsyncHTTPTransport(trust_env=False))
    return http.AsyncClient(transport=transport, trust_env=False, **options)


def guarded_client(rule: OutboundPolicy, *, module: str = "httpx", **options: Any) -> Any:
    """`guarded_async_client` for blocking code."""
    import importlib

    http = importlib.import_module(module)
    _, sync_cls = _transport_classes(module)
    transport = sync_cls(rule, http.HTTPTransport(trust_env=False))
    return http.Client(transport=transport, trust_env=False, **options)


def refusal_in(exc: BaseException) -> OutboundRefused | None:
    """The guard's refusal behind an HTTP client's error, if that is what it was."""
    seen: BaseException | None = exc
    while seen is not None:
        if isinstance(seen, OutboundRefused):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
