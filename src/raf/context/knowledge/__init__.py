"""Knowledge (RAG): loaders, chunkers, a SQLite FTS5/BM25 index and a context provider."""

from raf.context.knowledge.chunkers import Chunk, Chunker, MarkdownChunker, RecursiveChunker
from raf.context.knowledge.embeddings import MiniLmEmbedder
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
    "Hit",
    "IndexStats",
    "KnowledgeIndex",
    "KnowledgeIndexDamagedError",
    "KnowledgeProvider",
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
]
