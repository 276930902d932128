"""Knowledge: loaders, chunkers, the SQLite FTS5 index (incremental, hybrid) and the
provider in an agent run, over the corpus in tests/data/knowledge."""

from __future__ import annotations

import json
import os
import re
import shutil
import time
from pathlib import Path

import pytest

from raf.agent.builder import AgentBuilder
from raf.context.knowledge import (
    Document,
    KnowledgeIndex,
    KnowledgeProvider,
    MarkdownChunker,
    RecursiveChunker,
    fts_query,
    html_to_text,
    load_file,
)
from raf.core.contents import FunctionResultContent
from raf.core.errors import ConfigurationError
from raf.testing import ScriptedChatClient, call, reply

CORPUS = Path(__file__).resolve().parents[2] / "data" / "knowledge"


def make_pdf(path: Path, text: str) -> None:
    """A minimal one-page PDF with `text` in Helvetica (what pypdf reads back)."""
    stream = f"BT /F1 12 Tf 72 720 Td ({text}) Tj ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for i, body in enumerate(objects, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    path.write_bytes(bytes(out))


CONCEPTS = {
    0: {"price", "pricing", "cost", "eur", "cheap", "billing"},
    1: {"vacation", "holiday", "paid"},
    2: {"encrypted", "encryption", "aes", "cipher", "secure", "security", "tls"},
    3: {"plan", "plans", "subscription", "personal", "team", "free", "devices"},
}


def concept_embedder(texts):
    """Deterministic stand-in for an embedding model: one dimension per concept."""
    out = []
    for text in texts:
        words = set(re.findall(r"\w+", text.lower()))
        vec = [float(len(words & CONCEPTS[d])) for d in range(4)]
        out.append(vec)
    return out


def test_loaders_read_markdown_text_html_and_pdf(tmp_path: Path) -> None:
    md = load_file(CORPUS / "install.md")
    assert md.kind == "markdown" and md.title == "Installing Lumen Sync"
    html = load_file(CORPUS / "troubleshooting.html")
    assert html.kind == "html" and html.title == "Troubleshooting"
    assert "## Conflict copies" in html.text and "console.log" not in html.text
    assert "font:12px" not in html.text
    txt = load_file(CORPUS / "support.txt")
    assert txt.kind == "text" and "08:00 to 18:00" in txt.text
    make_pdf(tmp_path / "memo.pdf", "The quarterly memo mentions zeppelins.")
    pdf = load_file(tmp_path / "memo.pdf")
    assert pdf.kind == "pdf" and "zeppelins" in pdf.text


def test_html_to_text_keeps_structure() -> None:
    text, title = html_to_text(
        "<title>T</title><h3>Part</h3><ul><li>one</li><li>two</li></ul><p>a&amp;b</p>"
    )
    assert title == "T"
    assert "### Part" in text and "- one" in text and "a&b" in text


def test_recursive_chunker_bounds_and_overlap() -> None:
    words = " ".join(f"word{i}" for i in range(600))
    chunker = RecursiveChunker(max_chars=200, overlap=40)
    pieces = chunker.split(words)
    assert len(pieces) > 10
    assert all(len(p) <= 200 for p in pieces)
    first_tail = pieces[0].split()[-1]
    assert first_tail in pieces[1]  # overlap carries context across the cut
    with pytest.raises(ValueError):
        RecursiveChunker(max_chars=100, overlap=60)


def test_markdown_chunker_keeps_heading_paths_and_ignores_fenced_hashes() -> None:
    text = "# Guide\nintro\n## Install\nstep one\n```sh\n# not a heading\n```\n### Linux\napt\n"
    chunks = MarkdownChunker(max_chars=500).chunk(Document(source="g.md", text=text))
    assert [c.heading for c in chunks] == ["Guide", "Guide > Install", "Guide > Install > Linux"]
    assert "# not a heading" in chunks[1].text


def test_fts_query_is_safe() -> None:
    assert fts_query('what is "AND" OR NOT (x)*') == '"not" OR "x"'
    assert fts_query("the") == '"the"'
    assert fts_query("!!!") is None


def test_incremental_sync(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(CORPUS, docs)
    (docs / "questions.json").unlink()
    index = KnowledgeIndex(tmp_path / "index.sqlite")
    first = index.sync([docs])
    assert (first.added, first.updated, first.removed) == (15, 0, 0)
    assert first.chunks > 15
    second = index.sync([docs])
    assert (second.added, second.updated, second.unchanged) == (0, 0, 15)
    os.utime(docs / "offices.txt", None)  # touched, same content: hash says unchanged
    (docs / "pricing.md").write_text("# Plans\nEverything costs 99 EUR now.\n", encoding="utf-8")
    (docs / "glossary.md").unlink()
    time.sleep(0.01)
    third = index.sync([docs])
    assert (third.added, third.updated, third.removed, third.unchanged) == (0, 1, 1, 13)
    hits = index.search("how much does it cost", top_k=1)
    assert hits[0].source.endswith("pricing.md") and "99 EUR" in hits[0].text
    assert not any(s.endswith("glossary.md") for s in index.sources())
    index.close()
    reopened = KnowledgeIndex(tmp_path / "index.sqlite")
    assert reopened.sync([docs]).unchanged == 14
    reopened.close()


def recall_at_5(index: KnowledgeIndex) -> float:
    questions = json.loads((CORPUS / "questions.json").read_text(encoding="utf-8"))
    found = 0
    for q in questions:
        hits = index.search(q["question"], top_k=5)
        found += any(Path(h.source).name == q["source"] for h in hits)
    return found / len(questions)


def test_bm25_recall_on_the_question_set() -> None:
    index = KnowledgeIndex()
    index.sync([CORPUS / p for p in os.listdir(CORPUS) if not p.endswith(".json")])
    assert recall_at_5(index) >= 0.9


def test_hybrid_ranking_finds_what_bm25_misses() -> None:
    index = KnowledgeIndex(embedder=concept_embedder)
    index.sync([CORPUS / p for p in os.listdir(CORPUS) if not p.endswith(".json")])
    query = "cheap subscription"  # no corpus passage contains these words
    assert index.search(query, mode="bm25") == []
    hybrid = index.search(query, top_k=3)
    assert Path(hybrid[0].source).name == "pricing.md"
    both = index.search("holiday leave days", top_k=3, mode="hybrid")
    assert Path(both[0].source).name == "vacation-policy.md"
    assert recall_at_5(index) >= 0.9


def test_zero_vectors_get_no_rank() -> None:
    # sqlite-vec's cosine of a zero vector is NULL: it must neither crash nor rank.
    index = KnowledgeIndex(embedder=concept_embedder)
    index.add_document(Document(source="memo", text="Zeppelins arrive on Tuesday."))
    assert index.search("zeppelins", mode="vector") == []
    assert index.search("vacation", mode="vector") == []


def test_an_embedder_added_later_embeds_the_existing_chunks(tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    KnowledgeIndex(db).sync([CORPUS / "pricing.md", CORPUS / "vacation-policy.md"])
    index = KnowledgeIndex(db, embedder=concept_embedder)
    stats = index.sync([CORPUS / "pricing.md", CORPUS / "vacation-policy.md"])
    assert stats.unchanged == 2
    hits = index.search("cheap subscription", mode="vector")
    assert hits and Path(hits[0].source).name == "pricing.md"


def test_an_embedder_of_another_dimension_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "k.sqlite"
    KnowledgeIndex(db, embedder=concept_embedder).sync([CORPUS / "pricing.md"])
    other = KnowledgeIndex(db, embedder=lambda texts: [[1.0, 0.0] for _ in texts])
    with pytest.raises(ConfigurationError, match="2-dimension vectors but the index holds 4"):
        other.search("price", mode="vector")
    before = other.count()
    with pytest.raises(ConfigurationError, match=str(db)):
        other.sync([CORPUS / "pricing.md", CORPUS / "vacation-policy.md"])
    # The failed sync is rolled back whole: no chunk without its vector stays behind.
    assert other.count() == before
    assert [Path(s).name for s in other.sources()] == ["pricing.md"]


def test_bad_sources_are_reported_with_their_name(tmp_path: Path) -> None:
    (tmp_path / "a-good.md").write_text("# Good\nZeppelins arrive on Tuesday.", encoding="utf-8")
    (tmp_path / "broken.pdf").write_bytes(b"not a pdf at all")
    index = KnowledgeIndex()
    with pytest.raises(ConfigurationError, match=r"broken\.pdf' is not a readable PDF"):
        index.sync([tmp_path])
    # What was indexed before the broken file stays indexed.
    assert [Path(s).name for s in index.sources()] == ["a-good.md"]
    with pytest.raises(ConfigurationError, match="got int 42"):
        index.sync([42])  # type: ignore[list-item]
    # One path alone is one source, not a sequence of one-letter paths.
    (tmp_path / "broken.pdf").unlink()
    assert index.sync(str(tmp_path)).chunks == 1
    provider = KnowledgeProvider(str(tmp_path))
    assert provider.sources == [tmp_path]
    with pytest.raises(ConfigurationError, match="mode must be"):
        KnowledgeProvider([tmp_path], mode="both")  # type: ignore[arg-type]


def test_adding_documents_by_hand() -> None:
    index = KnowledgeIndex()
    n = index.add_document(Document(source="memo", text="Zeppelins arrive on Tuesday."))
    assert n == 1
    assert index.search("zeppelins")[0].source == "memo"
    index.remove_source("memo")
    assert index.search("zeppelins") == []


async def test_provider_injects_passages_as_instructions(tmp_path: Path) -> None:
    provider = KnowledgeProvider(
        [CORPUS], index_path=tmp_path / "k.sqlite", top_k=3, embedder=None
    )  # BM25 alone: the default embedder is tested in test_knowledge_embeddings.py
    model = ScriptedChatClient(["You get 28 days [vacation-policy.md]."])
    agent = AgentBuilder("a").with_chat_client(model).with_context_provider(provider).build()
    response = await agent.run("How many vacation days do employees get?")
    assert response.text.startswith("You get 28 days")
    system = model.requests[0].messages[0].text
    assert "vacation-policy.md § Vacation policy" in system
    assert "28 days of paid vacation" in system
    assert provider.kind == "knowledge" and provider.name == "knowledge"


async def test_provider_offers_a_search_tool() -> None:
    provider = KnowledgeProvider([CORPUS], mode="tool", name="docs", embedder=None)
    model = ScriptedChatClient(
        [reply("", call("search_knowledge", query="API rate limit", call_id="c1")), "600/min"]
    )
    agent = AgentBuilder("a").with_chat_client(model).with_context_provider(provider).build()
    response = await agent.run("What is the API rate limit?")
    assert response.text == "600/min"
    result = next(
        c for m in response.messages for c in m.contents if isinstance(c, FunctionResultContent)
    )
    assert Path(result.result[0]["source"]).name == "api.md"
    assert "600 requests per minute" in result.result[0]["text"]
    assert "search_knowledge" in model.requests[0].messages[0].text


def test_url_sources_are_fetched_and_reindexed_when_changed(tmp_path: Path) -> None:
    import functools
    import http.server
    import threading

    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(CORPUS / "troubleshooting.html", site / "help.html")
    (site / "notes.md").write_text("# Notes\nThe relay runs in Frankfurt.\n", encoding="utf-8")
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        index = KnowledgeIndex()
        urls = [f"{base}/help.html", f"{base}/notes.md"]
        first = index.sync(urls)
        assert (first.added, first.unchanged) == (2, 0)
        assert index.search("clock skew")[0].source == f"{base}/help.html"
        assert index.search("relay frankfurt")[0].heading == "Notes"
        assert index.sync(urls).unchanged == 2
        (site / "notes.md").write_text("# Notes\nThe relay moved to Dublin.\n", encoding="utf-8")
        again = index.sync(urls[1:])
        assert (again.updated, again.removed) == (1, 1)
        assert "Dublin" in index.search("relay")[0].text
        with pytest.raises(
            ConfigurationError,
            match=rf"^cannot fetch knowledge source {re.escape(base)}/missing\.md: HTTP 404$",
        ):
            index.sync([f"{base}/missing.md"])
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
