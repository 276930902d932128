"""The wiki: typed Markdown pages in spaces, full-text search, a link graph, tools."""

from raf.context.wiki.index import ConceptGraph, WikiHit, WikiIndex
from raf.context.wiki.provider import WikiProvider
from raf.context.wiki.store import Page, Wiki, WikiError, parse_page, slugify
from raf.context.wiki.tools import (
    WikiCreateTool,
    WikiReadTool,
    WikiSearchTool,
    WikiUpdateTool,
    wiki_tools,
)

__all__ = [
    "ConceptGraph",
    "Page",
    "Wiki",
    "WikiCreateTool",
    "WikiError",
    "WikiHit",
    "WikiIndex",
    "WikiProvider",
    "WikiReadTool",
    "WikiSearchTool",
    "WikiUpdateTool",
    "parse_page",
    "slugify",
    "wiki_tools",
]
