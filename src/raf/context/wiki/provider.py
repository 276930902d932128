"""The `wiki` context provider: a wiki's outline and related pages, plus its tools."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from raf.context.wiki.index import WikiIndex
from raf.context.wiki.store import Wiki
from raf.context.wiki.tools import wiki_tools
from raf.core.context import BaseContextProvider, ContextResult
from raf.core.messages import ChatMessage, Role
from raf.core.options import AgentRunOptions
from raf.core.sessions import AgentSession


class WikiProvider(BaseContextProvider):
    """Tells the model what the wiki holds, suggests pages for the request, adds tools."""

    kind = "wiki"

    def __init__(
        self,
        directory: str | Path | Wiki,
        *,
        name: str = "wiki",
        schemas: Mapping[str, Mapping[str, Any]] | None = None,
        related: int = 3,
        read_only: bool = False,
    ) -> None:
        self.wiki = directory if isinstance(directory, Wiki) else Wiki(directory, schemas=schemas)
        self.name = name
        self.related = related
        self.index = WikiIndex(self.wiki)
        self.tools = wiki_tools(self.wiki, self.index, read_only=read_only)

    def _outline(self, query: str) -> str:
        pages = self.wiki.pages()
        spaces = self.wiki.spaces()
        lines = [
            f"You have a wiki ({len(pages)} pages in spaces: {', '.join(spaces) or 'none yet'}). "
            "Use wiki_search and wiki_read to consult it"
            + ("" if len(self.tools) == 2 else ", wiki_create and wiki_update to record")
            + ". Link pages with [[Title]]."
        ]
        schemas = self.wiki.schemas
        if schemas:
            lines.append("Page types and their required fields:")
            for kind, schema in sorted(schemas.items()):
                required = [f for f in schema.get("required", []) if f not in ("title", "type")]
                lines.append(f"- {kind}: {', '.join(required) or '(none)'}")
        if query and self.related:
            hits = self.index.search(query, top_k=self.related)
            if hits:
                lines.append("Pages that may be relevant:")
                lines += [f"- {h.ref} ({h.title}): {h.snippet}" for h in hits]
        return "\n".join(lines)

    async def on_invoking(
        self,
        agent: Any,
        session: AgentSession,
        messages: Sequence[ChatMessage],
        options: AgentRunOptions,
    ) -> ContextResult:
        query = next(
            (m.text for m in reversed(messages) if m.role is Role.USER and m.text.strip()), ""
        )
        text = await asyncio.to_thread(self._outline, query)
        return ContextResult(instructions=text, tools=list(self.tools))
