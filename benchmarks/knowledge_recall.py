"""Recall@5 of the knowledge index on our own question set (tests/data/knowledge).

Each question names the document that answers it; a hit is that document among the top
five passages. Prints recall@5 for BM25 alone.

    python benchmarks/knowledge_recall.py [--top-k 5] [--verbose]
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from raf.context.knowledge import KnowledgeIndex

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "knowledge"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--top-k", type=int, default=5)
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    questions = json.loads((CORPUS / "questions.json").read_text(encoding="utf-8"))
    index = KnowledgeIndex()
    stats = index.sync([p for p in sorted(CORPUS.iterdir()) if p.suffix != ".json"])
    found = 0
    for q in questions:
        hits = index.search(q["question"], top_k=args.top_k)
        names = [Path(h.source).name for h in hits]
        ok = q["source"] in names
        found += ok
        if args.verbose or not ok:
            mark = "ok  " if ok else "MISS"
            print(f"{mark} {q['question']!r} -> {names[:3]} (want {q['source']})")
    recall = found / len(questions)
    print(
        f"{stats.added} documents, {stats.chunks} chunks, {len(questions)} questions: "
        f"recall@{args.top_k} = {recall:.2f} ({found}/{len(questions)})"
    )


if __name__ == "__main__":
    main()
