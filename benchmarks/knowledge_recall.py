"""Recall@5 of the knowledge index on our own question sets (tests/data/knowledge).

Each question names the document that answers it; a hit is that document among the top
five passages. Two sets: `questions.json` (worded like the documents) and
`paraphrases.json` (the same facts asked in other words, where lexical search is weak).
Prints recall@5 for BM25 alone and, when the `rag-embeddings` extra is installed, for
hybrid ranking (BM25 + all-MiniLM-L6-v2 vectors from the local embedder, reciprocal-rank
fusion). benchmarks/embedders.py compares the local embedder with the PyTorch one.

    python benchmarks/knowledge_recall.py [--top-k 5] [--verbose] [--bm25-only]
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from raf.context.knowledge import KnowledgeIndex
from raf.core.errors import MissingExtraError

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "knowledge"
SETS = ("questions.json", "paraphrases.json")


def recall(
    index: KnowledgeIndex, questions: list[dict[str, Any]], top_k: int, mode: str, verbose: bool
) -> tuple[int, int]:
    found = 0
    for q in questions:
        hits = index.search(q["question"], top_k=top_k, mode=mode)  # type: ignore[arg-type]
        names = [Path(h.source).name for h in hits]
        ok = q["source"] in names
        found += ok
        if verbose or not ok:
            mark = "ok  " if ok else "MISS"
            print(f"  {mark} [{mode}] {q['question']!r} -> {names[:3]} (want {q['source']})")
    return found, len(questions)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--verbose", action="store_true")
    parser.add_argument("--bm25-only", action="store_true", help="do not load the model")
    args = parser.parse_args()
    sources = [p for p in sorted(CORPUS.iterdir()) if p.suffix != ".json"]
    indexes: list[tuple[str, KnowledgeIndex]] = []
    bm25 = KnowledgeIndex()
    stats = bm25.sync(sources)
    indexes.append(("bm25", bm25))
    if not args.bm25_only:
        try:
            started = time.perf_counter()
            hybrid = KnowledgeIndex(embedder="local")
            hybrid.sync(sources)
            took = time.perf_counter() - started
            vec = "sqlite-vec" if hybrid.uses_sqlite_vec else "pure Python"
            print(f"hybrid index (model load + embedding) in {took:.1f} s, vectors via {vec}")
            indexes.append(("hybrid", hybrid))
        except MissingExtraError as exc:
            print(f"hybrid skipped: {exc}")
    print(f"{stats.added} documents, {stats.chunks} chunks")
    for name in SETS:
        questions = json.loads((CORPUS / name).read_text(encoding="utf-8"))
        for mode, index in indexes:
            found, total = recall(index, questions, args.top_k, mode, args.verbose)
            print(
                f"{name:<17} {mode:<7} recall@{args.top_k} = {found / total:.2f} ({found}/{total})"
            )


if __name__ == "__main__":
    main()
