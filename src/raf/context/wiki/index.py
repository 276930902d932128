"""Full-text search (SQLite FTS5, BM25) and the concept graph of a wiki's links."""

from __future__ import annotations

import sqlite3
import threading
from dataclasses import dataclass, field

from raf.context.knowledge.index import fts_query
from raf.context.wiki.store import Page, Wiki, slugify


@dataclass(kw_only=True, slots=True)
class WikiHit:
    ref: str
    title: str
    type: str
    snippet: str
    score: float


@dataclass(kw_only=True, slots=True)
class ConceptGraph:
    """Pages as nodes, `[[links]]` as edges; unresolved targets kept apart."""

    titles: dict[str, str] = field(default_factory=dict)
    edges: dict[str, list[str]] = field(default_factory=dict)
    missing: dict[str, list[str]] = field(default_factory=dict)

    def backlinks(self, ref: str) -> list[str]:
        return sorted(src for src, targets in self.edges.items() if ref in targets)

    def neighbours(self, ref: str) -> list[str]:
        return sorted(set(self.edges.get(ref, [])) | set(self.backlinks(ref)))

    def to_dict(self) -> dict[str, object]:
        return {
            "nodes": [{"ref": r, "title": t} for r, t in sorted(self.titles.items())],
            "edges": [{"from": s, "to": t} for s, ts in sorted(self.edges.items()) for t in ts],
            "missing": self.missing,
        }


class WikiIndex:
    """An in-memory FTS5 index of a wiki, rebuilt when the pages change on disk."""

    def __init__(self, wiki: Wiki) -> None:
        self.wiki = wiki
        self._lock = threading.Lock()
        self._signature: tuple[tuple[str, int, int], ...] | None = None
        self._db = sqlite3.connect(":memory:", check_same_thread=False)
        self._db.execute(
            "CREATE VIRTUAL TABLE pages USING fts5("
            "ref UNINDEXED, space UNINDEXED, type UNINDEXED, title, fields, body, "
            "tokenize = 'porter unicode61')"
        )
        self._graph = ConceptGraph()

    def _refresh(self) -> None:
        signature = self.wiki.signature()
        if signature == self._signature:
            return
        pages = self.wiki.pages()
        self._db.execute("DELETE FROM pages")
        self._db.executemany(
            "INSERT INTO pages VALUES (?, ?, ?, ?, ?, ?)",
            [(p.ref, p.space, p.type, p.title, _fields_text(p), p.body) for p in pages],
        )
        self._db.commit()
        self._graph = self._build_graph(pages)
        self._signature = signature

    def _build_graph(self, pages: list[Page]) -> ConceptGraph:
        graph = ConceptGraph(titles={p.ref: p.title for p in pages})
        by_slug: dict[tuple[str, str], str] = {(p.space, p.slug): p.ref for p in pages}
        by_title = {p.title.lower(): p.ref for p in pages}
        for page in pages:
            targets: list[str] = []
            for link in page.links:
                space, slug = (
                    self.wiki.split_ref(link) if "/" in link else (page.space, slugify(link))
                )
                ref = by_slug.get((space, slug))
                if ref is None and "/" not in link:
                    ref = by_slug.get((self.wiki.default_space, slug)) or by_title.get(link.lower())
                    if ref is None:
                        ref = next((r for (_, s), r in by_slug.items() if s == slug), None)
                if ref is None:
                    graph.missing.setdefault(page.ref, []).append(link)
                elif ref != page.ref and ref not in targets:
                    targets.append(ref)
            graph.edges[page.ref] = targets
        return graph

    def search(self, query: str, *, top_k: int = 5, space: str | None = None) -> list[WikiHit]:
        match = fts_query(query)
        if match is None:
            return []
        with self._lock:
            self._refresh()
            sql = (
                "SELECT ref, title, type, snippet(pages, 5, '[', ']', ' … ', 12), "
                "bm25(pages, 0, 0, 0, 3.0, 1.5, 1.0) AS s FROM pages WHERE pages MATCH ?"
            )
            params: list[object] = [match]
            if space:
                sql += " AND space = ?"
                params.append(space)
            sql += " ORDER BY s LIMIT ?"
            params.append(top_k)
            rows = self._db.execute(sql, params).fetchall()
        return [
            WikiHit(ref=r[0], title=r[1], type=r[2], snippet=r[3], score=-float(r[4])) for r in rows
        ]

    def graph(self) -> ConceptGraph:
        with self._lock:
            self._refresh()
            return self._graph


def _fields_text(page: Page) -> str:
    return " ".join(f"{k} {v}" for k, v in page.fields.items())
