"""Ranking for the knowledge index: the FTS5 query, vector scores and their fusion."""

from __future__ import annotations

import math
import re
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

SearchMode = Literal["hybrid", "bm25", "vector"]

_STOPWORD_TEXT = (
    "a an and are as at be by can do does for from how i in is it of on or the to "
    "what when where which who why with you your my we our this that there"
)
_STOPWORDS = frozenset(_STOPWORD_TEXT.split())
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


def cosine_top(
    q: array[float], ids: Sequence[int], vecs: Sequence[array[float]], limit: int
) -> list[tuple[int, float]]:
    """The `limit` stored vectors most similar to `q` (all normalised), best first."""
    scored = [
        (cid, sum(a * b for a, b in zip(q, v, strict=False)))
        for cid, v in zip(ids, vecs, strict=True)
    ]
    # Orthogonal or opposite passages are not similar at all: they get no rank.
    scored = [item for item in scored if item[1] > 0.0]
    scored.sort(key=lambda x: x[1], reverse=True)
    return scored[:limit]


def rrf_fuse(
    results: Sequence[Sequence[tuple[int, float]]], rrf_k: int, top_k: int
) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of several rankings: the best `top_k` chunk ids."""
    fused: dict[int, float] = {}
    for ranking in results:
        for rank, (cid, _) in enumerate(ranking):
            fused[cid] = fused.get(cid, 0.0) + 1.0 / (rrf_k + rank + 1)
    return sorted(fused.items(), key=lambda x: x[1], reverse=True)[:top_k]
