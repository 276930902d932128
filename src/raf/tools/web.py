"""web_fetch (HTML → Markdown, SSRF-guarded, capped) and web_search (pluggable backends).

Every hop of a fetch passes raf's outbound guard (`raf.core.outbound`): resolved and
checked, and the connection goes to the very IP that was checked (the Host header and TLS
server name keep the original host), so DNS rebinding cannot slip a private address in
between check and use. A URL comes from the model here, so none is trusted by origin.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any
from urllib.parse import urljoin, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from raf.core import outbound
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
    (unless `allow_private`): raf's one outbound guard, as a tool error."""
    try:
        outbound.check_address(ip, allow_private=allow_private, who="web_fetch")
    except outbound.OutboundRefused as exc:
        raise FetchRefused(str(exc)) from None


async def _resolve(url: str, rule: outbound.OutboundPolicy) -> outbound.CheckedTarget:
    try:
        return await outbound.check_url(url, rule)
    except outbound.OutboundRefused as exc:
        raise FetchRefused(str(exc)) from None


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
        self._policy = outbound.policy(
            who="web_fetch", allow_private=allow_private, allow_hosts=self.allow_hosts
        )
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
                target = await _resolve(current, self._policy)
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
