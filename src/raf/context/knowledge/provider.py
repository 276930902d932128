"""The `knowledge` context provider: best passages as instructions, or a search tool."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from raf.context.knowledge.embeddings import EmbedderChoice
from raf.context.knowledge.index import (
    Hit,
    IndexStats,
    KnowledgeIndex,
    KnowledgeIndexDamagedError,
)
from raf.context.knowledge.loaders import as_sources, is_url
from raf.core.context import BaseContextProvider, ContextResult
from raf.core.errors import ConfigurationError
from raf.core.messages import ChatMessage, Role
from raf.core.options import AgentRunOptions
from raf.core.sessions import AgentSession
from raf.core.tools import BaseTool, ToolContext, ToolResult


def format_hits(hits: Sequence[Hit]) -> str:
    """Passages numbered, each with its source (and section) so the model can cite it."""
    blocks = []
    for n, hit in enumerate(hits, 1):
        where = f"{hit.source} § {hit.heading}" if hit.heading else hit.source
        blocks.append(f"[{n}] {where}\n{hit.text}")
    return "\n\n".join(blocks)


class SearchKnowledgeTool(BaseTool):
    """`search_knowledge(query, top_k)`: passages from the knowledge base with sources."""

    kind = "knowledge"

    def __init__(self, provider: KnowledgeProvider, *, name: str = "search_knowledge") -> None:
        self.provider = provider
        self.name = name
        self.description = (
            "Search the knowledge base and return the best passages with their sources."
        )
        self.parameters = {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "what to look for"},
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 20,
                    "description": f"how many passages (default {provider.top_k})",
                },
            },
            "required": ["query"],
        }

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        query = str(arguments.get("query", "")).strip()
        if not query:
            return ToolResult.fail("query must not be empty")
        top_k = int(arguments.get("top_k") or self.provider.top_k)
        hits = await self.provider.search(query, top_k=max(1, min(top_k, 20)))
        return ToolResult.ok(
            [
                {"source": h.source, "section": h.heading, "text": h.text, "score": h.score}
                for h in hits
            ]
        )


class KnowledgeProvider(BaseContextProvider):
    """Retrieval over local documents (Markdown, text, HTML, PDF) in a SQLite index.

    Search is hybrid (BM25 and meaning, fused by rank) with raf's local embedder where the
    `rag-embeddings` extra is installed, BM25 alone where it is not (`embedder="auto"`);
    `embedder=None` is BM25 alone, `"local"` requires the embedder, or pass your own.
    """

    kind = "knowledge"

    def __init__(
        self,
        sources: str | Path | Sequence[str | Path],
        *,
        index_path: str | Path | None = None,
        mode: Literal["instructions", "tool"] = "instructions",
        top_k: int = 5,
        name: str = "knowledge",
        embedder: EmbedderChoice = "auto",
        max_chars: int = 1200,
        overlap: int = 150,
        auto_refresh: bool = True,
        min_score: float | None = None,
        tool_name: str = "search_knowledge",
    ) -> None:
        if mode not in ("instructions", "tool"):
            raise ConfigurationError(f"knowledge {name!r}: mode must be 'instructions' or 'tool'")
        self.sources: list[str | Path] = [s if is_url(s) else Path(s) for s in as_sources(sources)]
        self.mode = mode
        self.top_k = top_k
        self.name = name
        self.auto_refresh = auto_refresh
        self.min_score = min_score
        self.tool_name = tool_name
        """Name of the search tool in tool mode; give each of several providers its own."""
        self.index = KnowledgeIndex(
            index_path, embedder=embedder, max_chars=max_chars, overlap=overlap
        )
        self.last_stats: IndexStats | None = None
        self._lock = asyncio.Lock()
        self._synced = False

    async def refresh(self) -> IndexStats:
        """Re-index changed, new and removed files now."""
        async with self._lock:
            self.last_stats = await self.index.async_sync(self.sources)
            self._synced = True
            return self.last_stats

    async def search(self, query: str, *, top_k: int | None = None) -> list[Hit]:
        if not self._synced or self.auto_refresh:
            await self.refresh()
        try:
            hits = await self.index.async_search(query, top_k or self.top_k)
        except KnowledgeIndexDamagedError:  # rebuilt empty: index the sources again
            await self.refresh()
            hits = await self.index.async_search(query, top_k or self.top_k)
        if self.min_score is not None:
            hits = [h for h in hits if h.score >= self.min_score]
        return hits

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        if self.mode == "tool":
            if not self._synced:
                await self.refresh()
            return ContextResult(
                instructions=(
                    f"Use {self.tool_name} to look things up in the knowledge base "
                    f"{self.name!r}; cite the sources of what you use."
                ),
                tools=[SearchKnowledgeTool(self, name=self.tool_name)],
            )
        query = next(
            (m.text for m in reversed(messages) if m.role is Role.USER and m.text.strip()), ""
        )
        if not query:
            return ContextResult()
        hits = await self.search(query)
        if not hits:
            return ContextResult()
        return ContextResult(
            instructions=(
                "Passages from the knowledge base that may answer the request "
                "(cite the source in brackets when you use one):\n\n" + format_hits(hits)
            )
        )
