"""The wiki tools: wiki_search, wiki_read, wiki_create and wiki_update."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import Any

from raf.context.wiki.index import WikiIndex
from raf.context.wiki.store import Page, Wiki, WikiError
from raf.core.tools import BaseTool, Tool, ToolContext, ToolResult
from raf.tools.workspace import OutsideScopeError


def page_view(page: Page, index: WikiIndex) -> dict[str, Any]:
    graph = index.graph()
    return {
        "ref": page.ref,
        "title": page.title,
        "type": page.type,
        "fields": page.fields,
        "body": page.body,
        "links": graph.edges.get(page.ref, []),
        "backlinks": graph.backlinks(page.ref),
        "missing_links": graph.missing.get(page.ref, []),
    }


class _WikiTool(BaseTool):
    kind = "wiki"

    def __init__(self, wiki: Wiki, index: WikiIndex) -> None:
        self.wiki = wiki
        self.index = index

    async def invoke(self, arguments: Mapping[str, Any], context: ToolContext) -> ToolResult:
        try:
            return await asyncio.to_thread(self.run, dict(arguments))
        except (WikiError, OutsideScopeError) as exc:
            return ToolResult.fail(str(exc))

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        raise WikiError(f"{self.name} has no implementation")


class WikiSearchTool(_WikiTool):
    name = "wiki_search"
    description = "Full-text search of the wiki; returns matching pages with snippets."
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "query": {"type": "string"},
            "space": {"type": "string", "description": "only this space (optional)"},
            "top_k": {"type": "integer", "minimum": 1, "maximum": 20},
        },
        "required": ["query"],
    }

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        hits = self.index.search(
            str(arguments.get("query", "")),
            top_k=int(arguments.get("top_k") or 5),
            space=arguments.get("space") or None,
        )
        return ToolResult.ok(
            [{"ref": h.ref, "title": h.title, "type": h.type, "snippet": h.snippet} for h in hits]
        )


class WikiReadTool(_WikiTool):
    name = "wiki_read"
    description = (
        "Read a wiki page by 'space/slug', slug or title: front matter, body, links and backlinks."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {"page": {"type": "string"}},
        "required": ["page"],
    }

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        page = self.wiki.read(str(arguments.get("page", "")))
        return ToolResult.ok(page_view(page, self.index))


class WikiCreateTool(_WikiTool):
    name = "wiki_create"
    description = (
        "Create a wiki page. Link other pages with [[Title]]. Typed pages must carry the "
        "fields their type's schema requires."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "title": {"type": "string"},
            "body": {"type": "string", "description": "Markdown"},
            "space": {"type": "string"},
            "type": {"type": "string", "description": "page type (default 'page')"},
            "fields": {"type": "object", "description": "front matter fields of the type"},
        },
        "required": ["title", "body"],
    }

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        page = self.wiki.create(
            str(arguments["title"]),
            str(arguments.get("body", "")),
            space=arguments.get("space") or None,
            type=str(arguments.get("type") or "page"),
            fields=arguments.get("fields") or {},
        )
        return ToolResult.ok({"created": page.ref})


class WikiUpdateTool(_WikiTool):
    name = "wiki_update"
    description = (
        "Update a wiki page: new body and/or title, fields merged (null removes one). "
        "The previous version is kept in the page history."
    )
    parameters = {  # noqa: RUF012
        "type": "object",
        "properties": {
            "page": {"type": "string"},
            "body": {"type": "string"},
            "title": {"type": "string"},
            "fields": {"type": "object"},
            "note": {"type": "string", "description": "why the page changes"},
        },
        "required": ["page"],
    }

    def run(self, arguments: dict[str, Any]) -> ToolResult:
        page = self.wiki.update(
            str(arguments["page"]),
            body=arguments.get("body"),
            title=arguments.get("title"),
            fields=arguments.get("fields"),
            note=str(arguments.get("note") or ""),
        )
        return ToolResult.ok({"updated": page.ref, "versions": len(self.wiki.history(page.ref))})


def wiki_tools(
    wiki: Wiki, index: WikiIndex | None = None, *, read_only: bool = False
) -> list[Tool]:
    """The four wiki tools over one wiki (two when read-only)."""
    index = index or WikiIndex(wiki)
    tools: list[Tool] = [WikiSearchTool(wiki, index), WikiReadTool(wiki, index)]
    if not read_only:
        tools += [WikiCreateTool(wiki, index), WikiUpdateTool(wiki, index)]
    return tools
