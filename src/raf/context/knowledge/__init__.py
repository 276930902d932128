"""Knowledge (RAG): loaders, chunkers, a SQLite FTS5/BM25 index and a context provider."""

from raf.clients.local.embedder import LocalEmbedder
from raf.context.knowledge.chunkers import Chunk, Chunker, MarkdownChunker, RecursiveChunker
from raf.context.knowledge.embeddings import EmbedderChoice, MiniLmEmbedder, resolve_embedder
from raf.context.knowledge.index import (
    Embedder,
    Hit,
    IndexStats,
    KnowledgeIndex,
    KnowledgeIndexDamagedError,
    as_embedder,
    fts_query,
)
from raf.context.knowledge.loaders import Document, html_to_text, iter_files, load_file
from raf.context.knowledge.provider import KnowledgeProvider, SearchKnowledgeTool, format_hits

__all__ = [
    "Chunk",
    "Chunker",
    "Document",
    "Embedder",
    "EmbedderChoice",
    "Hit",
    "IndexStats",
    "KnowledgeIndex",
    "KnowledgeIndexDamagedError",
    "KnowledgeProvider",
    "LocalEmbedder",
    "MarkdownChunker",
    "MiniLmEmbedder",
    "RecursiveChunker",
    "SearchKnowledgeTool",
    "as_embedder",
    "format_hits",
    "fts_query",
    "html_to_text",
    "iter_files",
    "load_file",
    "resolve_embedder",
]
