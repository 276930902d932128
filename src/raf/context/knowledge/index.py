"""The knowledge index: SQLite FTS5 (BM25) by default, optional embeddings, hybrid RRF.

Everything lives in one SQLite file (or in memory): no server. Files are re-indexed
incrementally: a file whose size and mtime are unchanged is skipped, one whose content
hash is unchanged only has its mtime updated, and files that disappeared are dropped.
The methods are blocking; the `a*` variants run them in a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import sqlite3
import threading
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from raf.clients.local.embedder import LocalEmbedder
from raf.context.knowledge._ranking import (
    Hit,
    SearchMode,
    _normalise,
    cosine_top,
    fts_query,
    rrf_fuse,
)
from raf.context.knowledge._storage import (
    KnowledgeIndexDamagedError,
    _is_damage,
    connect_checked,
    set_aside,
)
from raf.context.knowledge._sync_lock import sync_lock
from raf.context.knowledge.chunkers import Chunk, Chunker, default_chunker_for
from raf.context.knowledge.embeddings import (
    Embedder,
    EmbedderChoice,
    load_or_why_not,
    log,
    resolve_embedder,
)
from raf.context.knowledge.loaders import (
    Document,
    as_sources,
    is_url,
    iter_files,
    load_file,
    load_url,
    read_source,
)
from raf.core.errors import ConfigurationError
from raf.core.private_files import private_file

__all__ = [
    "Embedder",
    "Hit",
    "IndexStats",
    "KnowledgeIndex",
    "KnowledgeIndexDamagedError",
    "SearchMode",
    "as_embedder",
    "fts_query",
]


@dataclass(kw_only=True, slots=True)
class IndexStats:
    """What one `sync` did."""

    added: int = 0
    updated: int = 0
    removed: int = 0
    unchanged: int = 0
    chunks: int = 0
    vanished: list[str] = field(default_factory=list)
    """Files that were deleted while the sync ran (listed, then gone when read): they are
    left out, and dropped from the index if it held them."""


class KnowledgeIndex:
    """Chunks of documents in SQLite, searchable by BM25, vectors, or both (RRF)."""

    def __init__(
        self,
        path: str | Path | None = None,
        *,
        embedder: EmbedderChoice = None,
        chunker: Chunker | None = None,
        max_chars: int = 1200,
        overlap: int = 150,
        rrf_k: int = 60,
    ) -> None:
        self.path = str(path) if path is not None else ":memory:"
        if path is not None:
            private_file(self.path)
        self.embedder = resolve_embedder(embedder)
        """The embedder in use; `"local"` is resolved to raf's shared `LocalEmbedder`, and
        so is `"auto"` where it can run (None there: BM25 alone)."""
        self._may_fall_back = isinstance(embedder, str) and embedder == "auto"
        """`"auto"` until its first use: BM25 alone if the embedder turns out unable to run."""
        self.chunker = chunker
        self.max_chars = max_chars
        self.overlap = overlap
        self.rrf_k = rrf_k
        self._lock = threading.RLock()
        self._vectors: tuple[list[int], list[array[float]]] | None = None
        self._dim: int | None = None
        self._db, self._vec_sql = self._open()

    def _settle_embedder(self) -> None:
        """With `"auto"`, before the embedder is first used: search by BM25 alone, with a
        warning, where its model cannot be had (offline with nothing cached) or the file
        holds another embedder's vectors. The file keeps everything it holds."""
        if not self._may_fall_back:
            return
        with self._lock:
            if not self._may_fall_back:
                return
            self._may_fall_back = False
            embedder = self.embedder
            if not isinstance(embedder, LocalEmbedder):
                return
            row = self._db.execute("SELECT length(vec) FROM vectors LIMIT 1").fetchone()
            if row is not None and int(row[0]) // 4 != embedder.dimensions:
                log.warning(
                    "knowledge index %s holds %d-dimension vectors from another embedder: it "
                    "searches by BM25 alone and keeps them; pass that embedder to search by "
                    "meaning too, or embedder=None to say BM25 is meant",
                    self.path,
                    int(row[0]) // 4,
                )
                self.embedder = None
                return
            problem = load_or_why_not(embedder)
            if problem is not None:
                log.warning(
                    "knowledge index %s searches by BM25 alone for now: the local embedder "
                    "cannot run (%s); embedder='local' makes this an error, embedder=None "
                    "says BM25 is meant",
                    self.path,
                    problem,
                )
                self.embedder = None

    @property
    def uses_sqlite_vec(self) -> bool:
        return self._vec_sql

    def _open(self) -> tuple[sqlite3.Connection, bool]:
        """Connect and create the tables; a damaged file is set aside and rebuilt."""
        try:
            return self._connect_checked()
        except Exception as exc:
            if not _is_damage(exc) or self.path == ":memory:":
                raise
            self._set_aside(exc)
            return self._connect_checked()

    def _connect_checked(self) -> tuple[sqlite3.Connection, bool]:
        return connect_checked(self.path, vectors=self.embedder is not None)

    def _set_aside(self, exc: BaseException) -> None:
        """Move a damaged file to `<path>.damaged` (replacing an older one) and warn."""
        set_aside(self.path, exc)
        self._vectors = None
        self._dim = None

    def _heal(self, exc: BaseException) -> KnowledgeIndexDamagedError:
        """Damage met while in use: rebuild the file and say so (the caller raises)."""
        with self._lock:
            with contextlib.suppress(Exception):
                self._db.close()
            self._set_aside(exc)
            self._db, self._vec_sql = self._connect_checked()
        return KnowledgeIndexDamagedError(
            f"knowledge index {self.path} was damaged ({exc}); it was rebuilt empty: "
            "sync it again to index the sources"
        )

    @contextmanager
    def _transaction(self) -> Iterator[None]:
        """Hold the lock and the database's write lock (other processes wait), and commit;
        on any error roll back so nothing half-done stays."""
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield
            except BaseException:
                self._db.execute("ROLLBACK")
                self._vectors = None
                raise
            self._db.execute("COMMIT")

    @contextmanager
    def _reading(self) -> Iterator[None]:
        """One read transaction: every statement of a search sees the same snapshot, so
        another process's sync cannot replace chunks between finding and reading them."""
        with self._lock:
            self._db.execute("BEGIN")
            try:
                yield
            except BaseException:
                with contextlib.suppress(Exception):
                    self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _writer(self) -> AbstractContextManager[None]:
        """One sync at a time on this index file, across processes (`<path>.lock`)."""
        return sync_lock(self.path)

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
        self._settle_embedder()
        chunks = self.chunk_document(document)
        digest = hashlib.sha256(document.text.encode()).hexdigest()
        with self._transaction():
            self._remove(document.source)
            self._insert(chunks)
            self._db.execute(
                "INSERT OR REPLACE INTO files VALUES (?, ?, ?, ?, ?)",
                (document.source, 0, len(document.text), digest, origin),
            )
        return len(chunks)

    def add_chunks(self, chunks: Sequence[Chunk]) -> None:
        """Index ready-made chunks (they are kept until their source is removed)."""
        self._settle_embedder()
        with self._transaction():
            self._insert(chunks)

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
        self._embed(list(zip(ids, chunks, strict=True)))

    def _embed(self, items: Sequence[tuple[int, Chunk]]) -> None:
        if self.embedder is None or not items:
            return
        vectors = [
            self._checked(v)
            for v in self.embedder([f"{c.heading}\n{c.text}".strip() for _, c in items])
        ]
        self._db.executemany(
            "INSERT OR REPLACE INTO vectors (chunk_id, vec) VALUES (?, ?)",
            [(i, v.tobytes()) for (i, _), v in zip(items, vectors, strict=True)],
        )
        self._vectors = None

    def _checked(self, vector: Sequence[float]) -> array[float]:
        """The normalised vector, after checking it has the dimension already stored."""
        if self._dim is None:
            row = self._db.execute("SELECT length(vec) FROM vectors LIMIT 1").fetchone()
            self._dim = int(row[0]) // 4 if row else len(vector)
        if len(vector) != self._dim:
            raise ConfigurationError(
                f"knowledge index {self.path}: the embedder gives {len(vector)}-dimension "
                f"vectors but the index holds {self._dim}-dimension ones; use the same "
                "embedder or a new index file"
            )
        return _normalise(vector)

    def _embed_missing(self) -> None:
        """Embed chunks indexed before an embedder was set (the file was built without)."""
        if self.embedder is None:
            return
        rows = self._db.execute(
            "SELECT id, source, ordinal, heading, text FROM chunks "
            "WHERE id NOT IN (SELECT chunk_id FROM vectors)"
        ).fetchall()
        if rows:
            log.warning(
                "knowledge index %s: embedding %d chunk(s) indexed by BM25 alone, once, so "
                "they are found by meaning too (embedder=None keeps the index BM25 alone)",
                self.path,
                len(rows),
            )
        for start in range(0, len(rows), 256):
            batch = rows[start : start + 256]
            self._embed(
                [
                    (
                        int(r[0]),
                        Chunk(source=r[1], ordinal=int(r[2]), heading=r[3] or "", text=r[4]),
                    )
                    for r in batch
                ]
            )

    def _remove(self, source: str) -> None:
        ids = [r[0] for r in self._db.execute("SELECT id FROM chunks WHERE source = ?", (source,))]
        if ids:
            self._db.executemany("DELETE FROM chunks_fts WHERE rowid = ?", [(i,) for i in ids])
            self._db.executemany("DELETE FROM vectors WHERE chunk_id = ?", [(i,) for i in ids])
            self._db.execute("DELETE FROM chunks WHERE source = ?", (source,))
            self._vectors = None
        self._db.execute("DELETE FROM files WHERE source = ?", (source,))

    def remove_source(self, source: str) -> None:
        with self._transaction():
            self._remove(source)

    def sync(self, sources: str | Path | Iterable[str | Path]) -> IndexStats:
        """Bring the index in line with the files under `sources` and the URLs among
        them (incremental: URLs are fetched again and compared by content hash); one
        process syncs a given index file at a time."""
        with self._writer():
            try:
                return self._sync(sources)
            except Exception as exc:
                if _is_damage(exc):
                    raise self._heal(exc) from None
                raise

    def _sync(self, sources: str | Path | Iterable[str | Path]) -> IndexStats:
        self._settle_embedder()
        stats = IndexStats()
        sources = as_sources(sources)
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
            with self._transaction():
                self._remove(url)
                self._insert(chunks)
                self._db.execute(
                    "INSERT INTO files VALUES (?, 0, ?, ?, 'url')",
                    (url, len(document.text), digest),
                )
            if previous is None:
                stats.added += 1
            else:
                stats.updated += 1
        for path in files:
            source = str(path)
            try:
                st = path.stat()
                previous = known.get(source)
                if (
                    previous is not None
                    and previous[0] == st.st_mtime_ns
                    and previous[1] == st.st_size
                ):
                    current.add(source)
                    stats.unchanged += 1
                    continue
                data = read_source(path)  # refuses an oversized file before reading it
            except FileNotFoundError:
                stats.vanished.append(source)
                continue
            except OSError as exc:
                raise ConfigurationError(
                    f"cannot read knowledge source {source!r}: {exc.strerror or exc}"
                ) from exc
            current.add(source)
            digest = hashlib.sha256(data).hexdigest()
            if previous is not None and previous[2] == digest:
                with self._transaction():
                    self._db.execute(
                        "UPDATE files SET mtime_ns = ?, size = ? WHERE source = ?",
                        (st.st_mtime_ns, st.st_size, source),
                    )
                stats.unchanged += 1
                continue
            document = load_file(path, data=data)
            chunks = self.chunk_document(document)
            with self._transaction():
                self._remove(source)
                self._insert(chunks)
                self._db.execute(
                    "INSERT INTO files VALUES (?, ?, ?, ?, 'file')",
                    (source, st.st_mtime_ns, st.st_size, digest),
                )
            if previous is None:
                stats.added += 1
            else:
                stats.updated += 1
        with self._transaction():
            for source in set(known) - current:
                self._remove(source)
                stats.removed += 1
            self._embed_missing()
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

    def _vector(self, vector: Sequence[float] | None, limit: int) -> list[tuple[int, float]]:
        if vector is None:
            return []
        with self._lock:
            q = self._checked(vector)
            if self._vec_sql:
                # A zero vector has no cosine (NULL): like orthogonal ones, it gets no rank.
                rows = self._db.execute(
                    "SELECT chunk_id, d FROM (SELECT chunk_id, vec_distance_cosine(vec, ?) AS d "
                    "FROM vectors) WHERE d IS NOT NULL AND d < 1.0 ORDER BY d LIMIT ?",
                    (q.tobytes(), limit),
                ).fetchall()
                return [(int(r[0]), 1.0 - float(r[1])) for r in rows]
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
        return cosine_top(q, ids, vecs, limit)

    def search(self, query: str, top_k: int = 5, *, mode: SearchMode | None = None) -> list[Hit]:
        """The best `top_k` passages; hybrid (RRF) when an embedder is set, else BM25.
        A damaged file is rebuilt and `KnowledgeIndexDamagedError` raised."""
        try:
            return self._search(query, top_k, mode)
        except Exception as exc:
            if _is_damage(exc):
                raise self._heal(exc) from None
            raise

    def _search(self, query: str, top_k: int, mode: SearchMode | None) -> list[Hit]:
        self._settle_embedder()
        mode = mode or ("hybrid" if self.embedder is not None else "bm25")
        pool = max(50, top_k * 10)
        vector = None
        if mode != "bm25" and self.embedder is not None:  # before the read: it may be slow
            vector = self.embedder([query])[0]
        with self._reading():
            if mode == "bm25":
                ranked = self._bm25(query, top_k)
            elif mode == "vector":
                ranked = self._vector(vector, top_k)
            else:
                ranked = rrf_fuse(
                    (self._bm25(query, pool), self._vector(vector, pool)), self.rrf_k, top_k
                )
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

    async def async_sync(self, sources: str | Path | Iterable[str | Path]) -> IndexStats:
        return await asyncio.to_thread(self.sync, as_sources(sources))

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
