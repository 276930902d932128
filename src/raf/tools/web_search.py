"""web_search and its backends: DuckDuckGo's HTML page (no key), a SearXNG instance (JSON
API), and the keyed Brave and Tavily APIs — all behind one small protocol."""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable
from urllib.parse import parse_qs, urlsplit

from pydantic import BaseModel, ConfigDict, Field

from raf.core import outbound
from raf.core.errors import MissingExtraError, ToolExecutionError
from raf.core.model_tool import ModelTool
from raf.core.tools import ToolContext, ToolResult

try:
    import httpx
    from bs4 import BeautifulSoup
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingExtraError("web_search", "web", module=exc.name) from exc

USER_AGENT = "Mozilla/5.0 (compatible; raf-agents/0.1)"


@dataclass(frozen=True, kw_only=True, slots=True)
class SearchHit:
    """One search result."""

    title: str
    url: str
    snippet: str = ""


@runtime_checkable
class SearchBackend(Protocol):
    """A search engine: `search(client, query, count)` returns hits."""

    name: str

    async def search(
        self, client: httpx.AsyncClient, query: str, count: int
    ) -> list[SearchHit]: ...


def _json(response: httpx.Response, engine: str) -> Any:
    if response.status_code >= 400:
        raise ToolExecutionError(f"{engine} answered HTTP {response.status_code}")
    try:
        return response.json()
    except ValueError:
        raise ToolExecutionError(f"{engine} did not answer JSON") from None


class DuckDuckGoBackend:
    """DuckDuckGo's no-JavaScript HTML results page; needs no key."""

    name = "duckduckgo"

    def __init__(self, endpoint: str = "https://html.duckduckgo.com/html/") -> None:
        self.endpoint = endpoint

    async def search(self, client: httpx.AsyncClient, query: str, count: int) -> list[SearchHit]:
        response = await client.post(
            self.endpoint, data={"q": query}, headers={"User-Agent": USER_AGENT}
        )
        if response.status_code >= 400:
            raise ToolExecutionError(f"DuckDuckGo answered HTTP {response.status_code}")
        soup = BeautifulSoup(response.text, "html.parser")
        hits: list[SearchHit] = []
        for result in soup.select(".result"):
            link = result.select_one("a.result__a")
            if link is None:
                continue
            href = str(link.get("href") or "")
            target = parse_qs(urlsplit(href).query).get("uddg", [href])[0]
            if target.startswith("//"):
                target = "https:" + target
            snippet = result.select_one(".result__snippet")
            hits.append(
                SearchHit(
                    title=link.get_text(" ", strip=True),
                    url=target,
                    snippet=snippet.get_text(" ", strip=True) if snippet else "",
                )
            )
            if len(hits) >= count:
                break
        return hits


class SearxngBackend:
    """A SearXNG instance's JSON API (`/search?format=json`; enable the json format)."""

    name = "searxng"

    def __init__(self, base_url: str) -> None:
        self.base_url = base_url.rstrip("/")

    async def search(self, client: httpx.AsyncClient, query: str, count: int) -> list[SearchHit]:
        response = await client.get(
            f"{self.base_url}/search", params={"q": query, "format": "json"}
        )
        data = _json(response, "SearXNG")
        return [
            SearchHit(
                title=str(r.get("title", "")),
                url=str(r.get("url", "")),
                snippet=str(r.get("content", "")),
            )
            for r in data.get("results", [])[:count]
            if r.get("url")
        ]


class BraveBackend:
    """Brave Search API (key from BRAVE_API_KEY or the constructor)."""

    name = "brave"

    def __init__(
        self,
        api_key: str | None = None,
        endpoint: str = "https://api.search.brave.com/res/v1/web/search",
    ) -> None:
        key = api_key or os.environ.get("BRAVE_API_KEY")
        if not key:
            raise ToolExecutionError("the Brave backend needs an API key (BRAVE_API_KEY)")
        self.api_key = key
        self.endpoint = endpoint

    async def search(self, client: httpx.AsyncClient, query: str, count: int) -> list[SearchHit]:
        response = await client.get(
            self.endpoint,
            params={"q": query, "count": count},
            headers={"X-Subscription-Token": self.api_key, "Accept": "application/json"},
        )
        data = _json(response, "Brave")
        results = data.get("web", {}).get("results", [])
        return [
            SearchHit(
                title=str(r.get("title", "")),
                url=str(r.get("url", "")),
                snippet=str(r.get("description", "")),
            )
            for r in results[:count]
        ]

    def __repr__(self) -> str:
        return "BraveBackend(api_key=***)"


class TavilyBackend:
    """Tavily search API (key from TAVILY_API_KEY or the constructor)."""

    name = "tavily"

    def __init__(
        self, api_key: str | None = None, endpoint: str = "https://api.tavily.com/search"
    ) -> None:
        key = api_key or os.environ.get("TAVILY_API_KEY")
        if not key:
            raise ToolExecutionError("the Tavily backend needs an API key (TAVILY_API_KEY)")
        self.api_key = key
        self.endpoint = endpoint

    async def search(self, client: httpx.AsyncClient, query: str, count: int) -> list[SearchHit]:
        response = await client.post(
            self.endpoint,
            json={"query": query, "max_results": count},
            headers={"Authorization": f"Bearer {self.api_key}"},
        )
        data = _json(response, "Tavily")
        return [
            SearchHit(
                title=str(r.get("title", "")),
                url=str(r.get("url", "")),
                snippet=str(r.get("content", "")),
            )
            for r in data.get("results", [])[:count]
        ]

    def __repr__(self) -> str:
        return "TavilyBackend(api_key=***)"


def default_backend(config: Mapping[str, Any] | None = None) -> SearchBackend:
    """The backend named in `config` (`backend`, `url`, `apiKey`), else the first one the
    environment configures: SEARXNG_URL, BRAVE_API_KEY, TAVILY_API_KEY; else DuckDuckGo."""
    config = dict(config or {})
    name = str(config.get("backend", "")).lower()
    key = config.get("apiKey") or config.get("api_key")
    url = config.get("url") or config.get("baseUrl")
    if name == "searxng" or (not name and url):
        base = url or os.environ.get("SEARXNG_URL")
        if not base:
            raise ToolExecutionError("the searxng backend needs a url (or SEARXNG_URL)")
        return SearxngBackend(str(base))
    if name == "brave":
        return BraveBackend(key, **({"endpoint": url} if url else {}))
    if name == "tavily":
        return TavilyBackend(key, **({"endpoint": url} if url else {}))
    if name in ("duckduckgo", "ddg"):
        return DuckDuckGoBackend(**({"endpoint": url} if url else {}))
    if name:
        raise ToolExecutionError(
            f"unknown search backend {name!r}; use duckduckgo, searxng, brave or tavily"
        )
    if os.environ.get("SEARXNG_URL"):
        return SearxngBackend(os.environ["SEARXNG_URL"])
    if os.environ.get("BRAVE_API_KEY"):
        return BraveBackend()
    if os.environ.get("TAVILY_API_KEY"):
        return TavilyBackend()
    return DuckDuckGoBackend()


class WebSearch(ModelTool):
    """Search the web through a backend; returns titles, URLs and snippets."""

    name = "web_search"
    kind = "web"
    requires_approval = False
    description = "Search the web; returns a list of results (title, url, snippet)."

    class Arguments(BaseModel):
        model_config = ConfigDict(extra="forbid")
        query: str = Field(min_length=1, description="What to search for")
        count: int = Field(5, ge=1, le=20, description="How many results")

    def __init__(self, backend: SearchBackend | None = None, *, timeout_s: float = 15.0) -> None:
        self._backend = backend
        self.timeout_s = timeout_s

    @property
    def backend(self) -> SearchBackend:
        if self._backend is None:
            self._backend = default_backend()
        return self._backend

    async def call(self, args: Any, context: ToolContext) -> ToolResult:
        try:
            hits = await self.search(args.query, args.count)
        except ToolExecutionError as exc:
            return ToolResult.fail(f"web_search: {exc}")
        return ToolResult.ok([{"title": h.title, "url": h.url, "snippet": h.snippet} for h in hits])

    async def search(self, query: str, count: int = 5) -> list[SearchHit]:
        """Search; raises ToolExecutionError with a readable reason."""
        backend = self.backend
        # the backend's configured endpoint is the user's (a local SearxNG too); redirects
        # and anything else reach only public addresses
        configured = getattr(backend, "endpoint", None) or getattr(backend, "base_url", None)
        rule = outbound.policy(who=f"web_search ({backend.name})", trusted=[configured])
        try:
            async with outbound.guarded_async_client(
                rule, timeout=self.timeout_s, follow_redirects=True, max_redirects=5
            ) as client:
                return await backend.search(client, query, count)
        except httpx.HTTPError as exc:
            raise ToolExecutionError(
                f"{backend.name} search failed: {type(exc).__name__}: {exc}"
            ) from None

    def __repr__(self) -> str:
        return f"<WebSearch backend={self._backend!r}>"
