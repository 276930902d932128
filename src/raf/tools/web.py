"""web_fetch (HTML → Markdown, SSRF-guarded, capped) and web_search (pluggable backends).

Every hop of a fetch is resolved and checked here, and the connection goes to the very IP
that was checked (the Host header and TLS server name keep the original host), so DNS
rebinding cannot slip a private address in between check and use.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field

from raf.core.errors import MissingExtraError, ToolExecutionError
from raf.core.model_tool import ModelTool
from raf.core.tools import Tool, ToolContext, ToolResult

try:
    import httpx
    from bs4 import BeautifulSoup
    from markdownify import markdownify
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("web_fetch / web_search", "web", module=exc.name) from exc

from raf.tools.web_search import (
    BraveBackend,
    DuckDuckGoBackend,
    SearchBackend,
    SearchHit,
    SearxngBackend,
    TavilyBackend,
    WebSearch,
    default_backend,
)

__all__ = [
    "BraveBackend",
    "DuckDuckGoBackend",
    "SearchBackend",
    "SearchHit",
    "SearxngBackend",
    "TavilyBackend",
    "WebFetch",
    "WebSearch",
    "check_address",
    "default_backend",
    "web_tools",
]

USER_AGENT = "raf-agents/0.1 (+https://pypi.org/project/raf-agents/)"
_DROP_TAGS = ("script", "style", "noscript", "iframe", "svg", "template", "head")


class FetchRefused(ToolExecutionError):
    """The URL, a redirect hop or its address is not allowed."""


def check_address(ip: str, *, allow_private: bool) -> None:
    """Refuse loopback, private, link-local, multicast, reserved and unspecified addresses
    (unless `allow_private`)."""
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        addr = addr.ipv4_mapped
    if allow_private:
        return
    if isinstance(addr, ipaddress.IPv6Address):
        # 6to4 and Teredo carry an IPv4 address a relay would reach: judge that one too
        embedded = [addr.sixtofour, addr.teredo[1] if addr.teredo else None]
        for inner in embedded:
            if inner is not None:
                check_address(str(inner), allow_private=False)
    if not addr.is_global or addr.is_multicast or addr.is_reserved or addr.is_unspecified:
        raise FetchRefused(
            f"address {addr} is private, loopback or link-local; web_fetch refuses it "
            "(SSRF protection; enable allow_private to reach it)"
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class _Target:
    url: str
    host: str
    ip: str
    connect_url: str


async def _resolve(url: str, *, allow_private: bool, allow_hosts: Sequence[str]) -> _Target:
    try:
        parts = urlsplit(url)
        given_port = parts.port
    except ValueError as exc:
        raise FetchRefused(f"{url!r} is not a valid URL: {exc}") from None
    if parts.scheme not in ("http", "https"):
        raise FetchRefused(f"only http and https URLs can be fetched, not {parts.scheme!r}")
    host = parts.hostname
    if not host:
        raise FetchRefused(f"{url!r} has no host")
    if parts.username or parts.password:
        raise FetchRefused("URLs with credentials are refused")
    port = given_port or (443 if parts.scheme == "https" else 80)
    allowed = allow_private or host.lower() in {h.lower() for h in allow_hosts}
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout=10
        )
    except (OSError, TimeoutError) as exc:
        raise FetchRefused(f"cannot resolve {host!r}: {exc}") from None
    ips = list(dict.fromkeys(str(info[4][0]) for info in infos))
    if not ips:
        raise FetchRefused(f"{host!r} has no address")
    for ip in ips:  # every address must pass, or a rebinding resolver could pick another
        check_address(ip, allow_private=allowed)
    ip = ips[0]
    shown = f"[{ip}]" if ":" in ip else ip
    netloc = f"{shown}:{port}"
    connect_url = urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, ""))
    return _Target(url=url, host=host, ip=ip, connect_url=connect_url)


class WebFetch(ModelTool):
    """Fetch a URL and return its text (HTML as Markdown), with caps and SSRF protection."""

    name = "web_fetch"
    kind = "web"
    requires_approval = False
    description = (
        "Fetch a web page (http/https) and return its main text as Markdown. Long pages are "
        "cut; private and local network addresses are refused."
    )

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="forbid")
        url: str = Field(description="Absolute http(s) URL")

    def __init__(
        self,
        *,
        allow_private: bool = False,
        allow_hosts: Sequence[str] = (),
        timeout_s: float = 20.0,
        max_bytes: int = 2_000_000,
        max_chars: int = 40_000,
        max_redirects: int = 5,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.allow_private = allow_private
        self.allow_hosts = tuple(allow_hosts)
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_chars = max_chars
        self.max_redirects = max_redirects
        self.user_agent = user_agent

    async def call(self, args: Any, context: ToolContext) -> ToolResult:
        try:
            return ToolResult.ok(await self.fetch(args.url))
        except ToolExecutionError as exc:
            return ToolResult.fail(str(exc))

    async def fetch(self, url: str) -> dict[str, Any]:
        """Fetch `url`; raises ToolExecutionError with a model-readable reason."""
        try:
            async with asyncio.timeout(self.timeout_s):
                return await self._fetch(url)
        except TimeoutError:
            raise ToolExecutionError(
                f"web_fetch: {url} took longer than {self.timeout_s:g}s"
            ) from None
        except httpx.HTTPError as exc:
            raise ToolExecutionError(f"web_fetch: {url}: {type(exc).__name__}: {exc}") from None

    async def _fetch(self, url: str) -> dict[str, Any]:
        timeout = httpx.Timeout(self.timeout_s, connect=min(10.0, self.timeout_s))
        async with httpx.AsyncClient(
            follow_redirects=False, timeout=timeout, trust_env=False
        ) as client:
            current = url
            for _hop in range(self.max_redirects + 1):
                target = await _resolve(
                    current, allow_private=self.allow_private, allow_hosts=self.allow_hosts
                )
                host_header = urlsplit(current).netloc.rsplit("@", 1)[-1]
                request = client.build_request(
                    "GET",
                    target.connect_url,
                    headers={
                        "Host": host_header,
                        "User-Agent": self.user_agent,
                        "Accept": "text/html,text/plain,application/json;q=0.9,*/*;q=0.5",
                    },
                    extensions={"sni_hostname": target.host},
                )
                response = await client.send(request, stream=True)
                try:
                    if response.is_redirect:
                        location = response.headers.get("location", "")
                        current = urljoin(current, location)
                        continue
                    return await self._read(current, response)
                finally:
                    await response.aclose()
            raise FetchRefused(f"more than {self.max_redirects} redirects starting at {url}")

    async def _read(self, url: str, response: httpx.Response) -> dict[str, Any]:
        if response.status_code >= 400:
            raise ToolExecutionError(f"web_fetch: {url} answered HTTP {response.status_code}")
        body = bytearray()
        cut = False
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > self.max_bytes:
                del body[self.max_bytes :]
                cut = True
                break
        ctype = response.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            text = bytes(body).decode(response.encoding or "utf-8", errors="replace")
        except LookupError:  # an unknown charset name
            text = bytes(body).decode("utf-8", errors="replace")
        result: dict[str, Any] = {"url": url, "status": response.status_code}
        if ctype in ("text/html", "application/xhtml+xml") or (
            not ctype and text.lstrip()[:15].lower().startswith(("<!doctype", "<html"))
        ):
            title, content = html_to_markdown(text)
            if title:
                result["title"] = title
        elif ctype.startswith("text/") or ctype.endswith(("json", "xml")) or not ctype:
            content = text
        else:
            raise ToolExecutionError(f"web_fetch: {url} is {ctype}, not text")
        if len(content) > self.max_chars:
            content = content[: self.max_chars]
            cut = True
        result["content"] = content
        if cut:
            result["note"] = "the page was cut to fit the size limits"
        return result

    def __repr__(self) -> str:
        return f"<WebFetch allow_private={self.allow_private}>"


def html_to_markdown(html: str) -> tuple[str, str]:
    """The page title and its body as Markdown (scripts, styles and frames dropped)."""
    soup = BeautifulSoup(html, "html.parser")
    title = soup.title.get_text(strip=True) if soup.title else ""
    for tag in soup.find_all(_DROP_TAGS):
        tag.decompose()
    body = soup.body or soup
    try:
        markdown = markdownify(str(body), heading_style="ATX", strip=["img"])
    except RecursionError:  # nesting deeper than the converter recurses: keep the text
        markdown = body.get_text("\n")
    lines = [line.rstrip() for line in markdown.splitlines()]
    cleaned: list[str] = []
    for line in lines:
        if not line and cleaned and not cleaned[-1]:
            continue
        cleaned.append(line)
    return title, "\n".join(cleaned).strip()


def web_tools(**config: Any) -> list[Tool]:
    """web_search and web_fetch with default settings (or `config` for web_fetch)."""
    return [WebSearch(), WebFetch(**config)]
