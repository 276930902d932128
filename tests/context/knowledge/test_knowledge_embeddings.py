"""Knowledge with the real embedding models and sqlite-vec: the local one (all-MiniLM-L6-v2
in int8 on ONNX Runtime, the `rag-embeddings` extra, no PyTorch) and, for comparison, the
opt-in sentence-transformers one on PyTorch (`rag-sentence-transformers`), both of which
scripts/test.sh installs.

Nothing here is skipped: without the extras, these tests fail with MissingExtraError."""

from __future__ import annotations

import asyncio
import importlib
import json
import math
import os
import sqlite3
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from raf.clients.local.embedder import LocalEmbedder, default_embedder, similarity
from raf.context.knowledge import KnowledgeIndex, KnowledgeProvider, MiniLmEmbedder
from raf.core.errors import ConfigurationError
from raf.decl import DeclAgentBuilder
from raf.testing import ScriptedChatClient

CORPUS = Path(__file__).resolve().parents[2] / "data" / "knowledge"
SOURCES = [CORPUS / p for p in sorted(os.listdir(CORPUS)) if not p.endswith(".json")]
PARAPHRASES = json.loads((CORPUS / "paraphrases.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def embedder() -> LocalEmbedder:
    model = default_embedder()
    model(["warm up"])
    return model


@pytest.fixture(scope="module")
def hybrid(embedder: LocalEmbedder) -> KnowledgeIndex:
    index = KnowledgeIndex(embedder="local")
    assert index.embedder is embedder  # "local" is the one shared embedder
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


def test_local_embedder_gives_384_dimensions_and_meaningful_similarity(
    embedder: LocalEmbedder,
) -> None:
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
    assert recall_at_5(hybrid, "hybrid") == 1.0  # every paraphrase finds its page


def test_provider_and_yaml_name_the_local_embedder(tmp_path: Path) -> None:
    provider = KnowledgeProvider(SOURCES, embedder="local", mode="tool")
    assert provider.index.embedder is default_embedder()
    hits = asyncio.run(provider.search("How many holidays do workers have annually?"))
    assert "vacation-policy.md" in [Path(h.source).name for h in hits[:2]]
    with pytest.raises(ConfigurationError, match="'minilm'"):
        KnowledgeProvider(SOURCES, embedder="minilm")  # type: ignore[arg-type]
    document = tmp_path / "agent.yaml"
    document.write_text(
        f"name: faq\ncontexts:\n  - kind: knowledge\n    config:\n"
        f"      sources: [{CORPUS}]\n      embedder: local\n",
        encoding="utf-8",
    )
    agent = DeclAgentBuilder().from_file(document).with_chat_client(ScriptedChatClient([])).build()
    (declared,) = [p for p in agent.context_providers if isinstance(p, KnowledgeProvider)]
    assert declared.index.embedder is default_embedder()


def test_sentence_transformers_path_gives_the_same_vectors(embedder: LocalEmbedder) -> None:
    """The opt-in PyTorch path still works, and the int8 ONNX model agrees with it."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HF_HUB_OFFLINE", "1")  # the model must come from the wheel, not a hub
        mp.setenv("TRANSFORMERS_OFFLINE", "1")
        reference = MiniLmEmbedder()
        texts = [q["question"] for q in PARAPHRASES] + [p.read_text()[:1200] for p in SOURCES]
        for want, got in zip(reference(texts), embedder(texts), strict=True):
            assert similarity(want, got) > 0.998


def test_pure_python_fallback_ranks_like_sqlite_vec(
    embedder: LocalEmbedder, hybrid: KnowledgeIndex, monkeypatch: pytest.MonkeyPatch
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


def provider_recall_at_5(provider: KnowledgeProvider) -> float:
    found = 0
    for q in PARAPHRASES:
        hits = asyncio.run(provider.search(q["question"], top_k=5))
        found += q["source"] in [Path(h.source).name for h in hits]
    return found / len(PARAPHRASES)


def declared(tmp_path: Path, embedder_line: str) -> KnowledgeProvider:
    document = tmp_path / "agent.yaml"
    document.write_text(
        f"name: faq\ncontexts:\n  - kind: knowledge\n    config:\n"
        f"      sources: [{CORPUS}]\n{embedder_line}",
        encoding="utf-8",
    )
    agent = DeclAgentBuilder().from_file(document).with_chat_client(ScriptedChatClient([])).build()
    (provider,) = [p for p in agent.context_providers if isinstance(p, KnowledgeProvider)]
    return provider


def test_knowledge_searches_hybrid_by_default(embedder: LocalEmbedder, tmp_path: Path) -> None:
    provider = KnowledgeProvider(SOURCES, index_path=tmp_path / "k.sqlite")
    assert provider.index.embedder is embedder  # no embedder given: the local one
    assert provider_recall_at_5(provider) == 1.0  # every paraphrase finds its page
    with sqlite3.connect(tmp_path / "k.sqlite") as db:
        vectors, chunks = db.execute(
            "SELECT (SELECT count(*) FROM vectors), (SELECT count(*) FROM chunks)"
        ).fetchone()
    assert vectors == chunks > 0
    # YAML: unset and `auto` are the same default; `none` is BM25 alone.
    assert declared(tmp_path, "").index.embedder is embedder
    assert declared(tmp_path, "      embedder: auto\n").index.embedder is embedder
    assert declared(tmp_path, "      embedder: none\n").index.embedder is None


def test_a_bm25_index_file_gains_vectors_at_its_next_sync_and_loses_nothing(
    embedder: LocalEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "old.sqlite"
    old = KnowledgeIndex(path, embedder=None)  # as every index was built before
    stats = old.sync(SOURCES)
    before = old.search("vacation days", 3)
    old.close()
    provider = KnowledgeProvider(SOURCES, index_path=path)
    with caplog.at_level("WARNING", logger="raf.context.knowledge"):
        again = asyncio.run(provider.refresh())
    assert (again.added, again.updated, again.removed) == (0, 0, 0)  # nothing re-read
    assert again.chunks == stats.chunks
    said = [r.getMessage() for r in caplog.records]
    assert any(f"embedding {stats.chunks} chunk(s) indexed by BM25 alone" in m for m in said)
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM vectors").fetchone()[0] == stats.chunks
    assert provider_recall_at_5(provider) == 1.0
    # The same file opened BM25-only still answers as before.
    bm25 = KnowledgeIndex(path, embedder=None)
    assert [h.text for h in bm25.search("vacation days", 3)] == [h.text for h in before]


def test_a_file_with_another_embedders_vectors_keeps_them_and_searches_bm25(
    embedder: LocalEmbedder, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / "own.sqlite"

    def eight(texts: Sequence[str]) -> list[list[float]]:
        return [[float(len(t) % (i + 2)) + 1.0 for i in range(8)] for t in texts]

    own = KnowledgeIndex(path, embedder=eight)
    chunks = own.sync(SOURCES).chunks
    own.close()
    with sqlite3.connect(path) as db:
        kept = db.execute("SELECT chunk_id, vec FROM vectors ORDER BY chunk_id").fetchall()
    provider = KnowledgeProvider(SOURCES, index_path=path)
    with caplog.at_level("WARNING", logger="raf.context.knowledge"):
        hits = asyncio.run(provider.search("vacation days"))
    assert Path(hits[0].source).name == "vacation-policy.md"
    assert provider.index.embedder is None
    assert any(
        "8-dimension vectors from another embedder" in r.getMessage() for r in caplog.records
    )
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT chunk_id, vec FROM vectors ORDER BY chunk_id").fetchall() == kept
    assert len(kept) == chunks
    # Asked for by name, the local embedder on that file is an error, as before.
    with pytest.raises(ConfigurationError, match="384-dimension"):
        KnowledgeIndex(path, embedder="local").search("vacation days")


OFFLINE = """
import asyncio, json, logging, sys
from pathlib import Path
logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(message)s")
from raf.clients.local.model_store import ModelPullError
from raf.context.knowledge import KnowledgeProvider

docs = sys.argv[1]
default = KnowledgeProvider(docs)
hits = asyncio.run(default.search("vacation days"))
try:
    asyncio.run(KnowledgeProvider(docs, embedder="local").search("vacation"))
    required = "no error"
except ModelPullError as exc:
    required = str(exc)
print(json.dumps({
    "embedder": repr(default.index.embedder),
    "hits": [Path(h.source).name for h in hits],
    "required": required,
}))
"""


def test_offline_with_no_cached_model_the_default_falls_back_to_bm25(tmp_path: Path) -> None:
    """No model in the cache and no index to fetch it from: the default searches by BM25
    with a warning that says why; `embedder="local"` is an error that says what to run."""
    import subprocess

    cache = tmp_path / "cache"
    env = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[3] / "src"),
        "RAF_CACHE_DIR": str(cache),
        "PIP_INDEX_URL": "http://127.0.0.1:9/simple",  # a closed port: offline
        "PIP_NO_CACHE_DIR": "1",
        "PIP_RETRIES": "0",
        "PIP_CONFIG_FILE": os.devnull,
    }
    env.pop("PIP_FIND_LINKS", None)
    done = subprocess.run(
        [sys.executable, "-c", OFFLINE, str(CORPUS)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["embedder"] == "None"
    assert result["hits"][0] == "vacation-policy.md"
    assert "searches by BM25 alone for now: the local embedder cannot run" in done.stderr
    assert "raf models pull --embedder" in done.stderr
    assert "raf models pull --embedder" in result["required"]
    assert not cache.exists() or not list(cache.iterdir())  # nothing downloaded or half-kept
