"""The knowledge index: SQLite FTS5 (BM25) by default, optional embeddings, hybrid RRF.

Everything lives in one SQLite file (or in memory): no server. Files are re-indexed
incrementally: a file whose size and mtime are unchanged is skipped, one whose content
hash is unchanged only has its mtime updated, and files that disappeared are dropped.
The methods are blocking; the `a*` variants run them in a worker thread.
"""

from __future__ import annotations

import asyncio
import hashlib
import importlib
import math
import re
import sqlite3
import threading
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from raf.context.knowledge.chunkers import Chunk, Chunker, default_chunker_for
from raf.context.knowledge.loaders import Document, is_url, iter_files, load_file, load_url

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""Texts → one vector each (any fixed dimension). Blocking; called from a worker thread."""

SearchMode = Literal["hybrid", "bm25", "vector"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS files (
  source TEXT PRIMARY KEY, mtime_ns INTEGER, size INTEGER, sha256 TEXT, origin TEXT
);
CREATE TABLE IF NOT EXISTS chunks (
  id INTEGER PRIMARY KEY, source TEXT NOT NULL, ordinal INTEGER, heading TEXT, text TEXT
);
CREATE INDEX IF NOT EXISTS chunks_source ON chunks(source);
CREATE VIRTUAL TABLE IF NOT EXISTS chunks_fts USING fts5(
  text, heading, tokenize = 'porter unicode61'
);
CREATE TABLE IF NOT EXISTS vectors (chunk_id INTEGER PRIMARY KEY, vec BLOB NOT NULL);
"""

_STOPWORDS = frozenset(
    [
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "can",
        "do",
        "does",
        "for",
        "from",
        "how",
        "i",
        "in",
        "is",
        "it",
        "of",
        "on",
        "or",
        "the",
        "to",
        "what",
        "when",
        "where",
        "which",
        "who",
        "why",
        "with",
        "you",
        "your",
        "my",
        "we",
        "our",
        "this",
        "that",
        "there",
    ]
)
_WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(kw_only=True, slots=True)
class Hit:
    """One passage found for a query."""

    source: str
    text: str
    heading: str
    ordinal: int
    score: float
    chunk_id: int


@dataclass(kw_only=True, slots=True)
class IndexStats:
    """What one `sync` did."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0


def fts_query(text: str) -> str | None:
    """A safe FTS5 query: the words of `text` (stop words dropped), OR-ed and quoted."""
    words = [w for w in _WORD.findall(text.lower()) if w not in _STOPWORDS]
    if not words:
        words = _WORD.findall(text.lower())
    unique = list(dict.fromkeys(words))
    return " OR ".join(f'"{w}"' for w in unique) if unique else None


def _normalise(vector: Sequence[float]) -> array[float]:
    norm = math.sqrt(sum(v * v for v in vector)) or 1.0
    return array("f", (v / norm for v in vector))


class KnowledgeIndex:
    """Chunks of documents in SQLite, searchable by BM25, vectors, or both (RRF)."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        embedder: Embedder | None = None,
        chunker: Chunker | None = None,
        max_chars: int = 1200,
        overlap: int = 150,
        rrf_k: int = 60,
    ) -> None:
        self.path = str(path) if path is not None else ":memory:"
        if path is not None:
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        self.embedder = embedder
        self.chunker = chunker
        self.max_chars = max_chars
        self.overlap = overlap
        self.rrf_k = rrf_k
        self._lock = threading.RLock()
        self._db = sqlite3.connect(self.path, check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._vec_sql = self._load_sqlite_vec()
        self._vectors: tuple[list[int], list[array[float]]] | None = None

    def _load_sqlite_vec(self) -> bool:
        """Use sqlite-vec's distance function when the extension can be loaded."""
        if not hasattr(self._db, "enable_load_extension"):
            return False
        try:
            sqlite_vec = importlib.import_module("sqlite_vec")
            self._db.enable_load_extension(True)
            sqlite_vec.load(self._db)
            self._db.enable_load_extension(False)
        except (ImportError, sqlite3.Error, AttributeError):
            return False
        return True

    @property
    def uses_sqlite_vec(self) -> bool:
        return self._vec_sql

    def close(self) -> None:
        with self._lock:
            self._db.close()

    # -- writing -----------------------------------------------------------------------

    def chunk_document(self, document: Document) -> list[Chunk]:
        chunker = self.chunker or default_chunker_for(
            document, max_chars=self.max_chars, overlap=self.overlap
        )
        return chunker.chunk(document)

    def add_document(self, document: Document, *, origin: str = "manual") -> int:
        """(Re)index one document; returns its number of chunks."""
        chunks = self.chunk_document(document)
        digest = hashlib.sha256(document.text.encode()).hexdigest()
        with self._lock:
            self._remove(document.source)
            self._insert(chunks)
            self._db.execute(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                (document.source, 0, len(document.text), digest, origin),
            )
            self._db.commit()
        return len(chunks)

    def add_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Index ready-made chunks (they are kept until their source is removed)."""
        with self._lock:
            self._insert(chunks)
            self._db.commit()

    def _insert(self, chunks: Sequence[Chunk]) -> None:
        cur = self._db.cursor()
        ids: list[int] = []
        for chunk in chunks:
            cur.execute(
                "INSERT INTO chunks (source, ordinal, heading, text) VALUES (?, ?, ?, ?)",
                (chunk.source, chunk.ordinal, chunk.heading, chunk.text),
            )
            ids.append(int(cur.lastrowid or 0))
        cur.executemany(
            "INSERT INTO chunks_fts (rowid, text, heading) VALUES (?, ?, ?)",
            [(i, c.text, c.heading) for i, c in zip(ids, chunks, strict=True)],
        )
        if self.embedder is not None and chunks:
            vectors = self.embedder([f"{c.heading}\n{c.text}".strip() for c in chunks])
            cur.executemany(
                "INSERT INTO vectors (chunk_id, vec) VALUES (?, ?)",
                [(i, _normalise(v).tobytes()) for i, v in zip(ids, vectors, strict=True)],
            )
            self._vectors = None

    def _remove(self, source: str) -> None:
        ids = [r[0] for r in self._db.execute("SELECT id FROM chunks WHERE source = ?", (source,))]
        if ids:
            self._db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(i,) for i in ids])
            self._db.executemany("DELETE FROM vectors WHERE chunk_id = ?", [(i,) for i in ids])
            self._db.execute("DELETE FROM chunks WHERE source = ?", (source,))
            self._vectors = None
        self._db.execute("DELETE FROM files WHERE source = ?", (source,))

    def remove_source(self, source: str) -> None:
        with self._lock:
            self._remove(source)
            self._db.commit()

    def sync(self, sources: Iterable[str | Path]) -> IndexStats:
        """Bring the index in line with the files under `sources` and the URLs among
        them (incremental: URLs are fetched again and compared by content hash)."""
        stats = IndexStats()
        sources = list(sources)
        files = list(iter_files(sources))
        with self._lock:
            known = {
                row[0]: (row[1], row[2], row[3])
                for row in self._db.execute(
                    "SELECT source, mtime_ns, size, sha256 FROM files "
                    "WHERE origin IN ('file', 'url')"
                )
            }
        current: set[str] = set()
        for url in (str(s) for s in sources if is_url(s)):
            current.add(url)
            document = load_url(url)
            digest = hashlib.sha256(document.text.encode()).hexdigest()
            previous = known.get(url)
            if previous is not None and previous[2] == digest:
                stats.unchanged += 1
                continue
            chunks = self.chunk_document(document)
            with self._lock:
                self._remove(url)
                self._insert(chunks)
                self._db.execute(
                    "INSERT INTO files VALUES (?, 0, ?, ?, 'url')",
                    (url, len(document.text), digest),
                )
                self._db.commit()
            if previous is None:
                stats.added += 1
            else:
                stats.updated += 1
        for path in files:
            source = str(path)
            current.add(source)
            st = path.stat()
            previous = known.get(source)
            if previous is not None and previous[0] == st.st_mtime_ns and previous[1] == st.st_size:
                stats.unchanged += 1
                continue
            digest = hashlib.sha256(path.read_bytes()).hexdigest()
            if previous is not None and previous[2] == digest:
                with self._lock:
                    self._db.execute(
                        "UPDATE files SET mtime_ns = ?, size = ? WHERE source = ?",
                        (st.st_mtime_ns, st.st_size, source),
                    )
                    self._db.commit()
                stats.unchanged += 1
                continue
            document = load_file(path)
            chunks = self.chunk_document(document)
            with self._lock:
                self._remove(source)
                self._insert(chunks)
                self._db.execute(
                    "INSERT INTO files VALUES (?, ?, ?, ?, 'file')",
                    (source, st.st_mtime_ns, st.st_size, digest),
                )
                self._db.commit()
            if previous is None:
                stats.added += 1
            else:
                stats.updated += 1
        with self._lock:
            for source in set(known) - current:
                self._remove(source)
                stats.removed += 1
            self._db.commit()
            stats.chunks = self.count()
        return stats

    def count(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT count(*) FROM chunks").fetchone()
        return int(row[0])

    def sources(self) -> list[str]:
        with self._lock:
            return [r[0] for r in self._db.execute("SELECT source FROM files ORDER BY source")]

    # -- searching ---------------------------------------------------------------------

    def _bm25(self, query: str, limit: int) -> list[tuple[int, float]]:
        match = fts_query(query)
        if match is None:
            return []
        with self._lock:
            rows = self._db.execute(
                "SELECT rowid, bm25(chunks_fts, 1.0, 2.0) AS s FROM chunks_fts "
                "WHERE chunks_fts MATCH ? ORDER BY s LIMIT ?",
                (match, limit),
            ).fetchall()
        return [(int(r[0]), -float(r[1])) for r in rows]

    def _vector(self, query: str, limit: int) -> list[tuple[int, float]]:
        if self.embedder is None:
            return []
        q = _normalise(self.embedder([query])[0])
        with self._lock:
            if self._vec_sql:
                rows = self._db.execute(
                    "SELECT chunk_id, vec_distance_cosine(vec, ?) AS d FROM vectors "
                    "ORDER BY d LIMIT ?",
                    (q.tobytes(), limit),
                ).fetchall()
                return [(int(r[0]), 1.0 - float(r[1])) for r in rows if float(r[1]) < 1.0]
            if self._vectors is None:
                ids: list[int] = []
                vecs: list[array[float]] = []
                for chunk_id, blob in self._db.execute("SELECT chunk_id, vec FROM vectors"):
                    v = array("f")
                    v.frombytes(blob)
                    ids.append(int(chunk_id))
                    vecs.append(v)
                self._vectors = (ids, vecs)
            ids, vecs = self._vectors
        scored = [
            (cid, sum(a * b for a, b in zip(q, v, strict=False)))
            for cid, v in zip(ids, vecs, strict=True)
        ]
        # Orthogonal or opposite passages are not similar at all: they get no rank.
        scored = [item for item in scored if item[1] > 0.0]
        scored.sort(key=lambda x: x[1], reverse=True)
        return scored[:limit]

    def search(self, query: str, top_k: int = 5, *, mode: SearchMode | None = None) -> list[Hit]:
        """The best `top_k` passages; hybrid (RRF) when an embedder is set, else BM25."""
        mode = mode or ("hybrid" if self.embedder is not None else "bm25")
        pool = max(50, top_k * 10)
        if mode == "bm25":
            ranked = self._bm25(query, top_k)
        elif mode == "vector":
            ranked = self._vector(query, top_k)
        else:
            fused: dict[int, float] = {}
            for results in (self._bm25(query, pool), self._vector(query, pool)):
                for rank, (cid, _) in enumerate(results):
                    fused[cid] = fused.get(cid, 0.0) + 1.0 / (self.rrf_k + rank + 1)
            ranked = sorted(fused.items(), key=lambda x: x[1], reverse=True)[:top_k]
        return self._hits(ranked)

    def _hits(self, ranked: Sequence[tuple[int, float]]) -> list[Hit]:
        if not ranked:
            return []
        ids = [cid for cid, _ in ranked]
        marks = ",".join("?" * len(ids))
        with self._lock:
            rows = {
                int(r[0]): r
                for r in self._db.execute(
                    f"SELECT id, source, ordinal, heading, text FROM chunks WHERE id IN ({marks})",
                    ids,
                )
            }
        hits: list[Hit] = []
        for cid, score in ranked:
            row = rows.get(cid)
            if row is not None:
                hits.append(
                    Hit(
                        source=row[1],
                        ordinal=int(row[2]),
                        heading=row[3] or "",
                        text=row[4],
                        score=score,
                        chunk_id=cid,
                    )
                )
        return hits

    # -- async conveniences --------------------------------------------------------------

    async def async_sync(self, sources: Iterable[str | Path]) -> IndexStats:
        return await asyncio.to_thread(self.sync, list(sources))

    async def async_search(
        self, query: str, top_k: int = 5, *, mode: SearchMode | None = None
    ) -> list[Hit]:
        return await asyncio.to_thread(self.search, query, top_k, mode=mode)

    def __repr__(self) -> str:
        return f"<KnowledgeIndex {self.path!r}>"


def as_embedder(fn: Callable[[str], Sequence[float]]) -> Embedder:
    """Adapt a one-text embedding function to the batch `Embedder` shape."""

    def batch(texts: Sequence[str]) -> list[Sequence[float]]:
        return [fn(t) for t in texts]

    return batch
