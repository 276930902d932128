"""Knowledge index speed: build an FTS5 index of N chunks (default 10,000), then query it.

Chunks are synthetic paragraphs from a fixed vocabulary (seeded, so runs compare).
Prints build time (total and per 1,000 chunks) and BM25 query latency (median and p95).

    python benchmarks/knowledge_index.py [--chunks 10000] [--queries 200] [--file PATH]
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import tempfile
import time
import zlib
from collections.abc import Sequence
from pathlib import Path

from raf.context.knowledge import Chunk, KnowledgeIndex

WORDS = [
    "sync",
    "folder",
    "device",
    "key",
    "relay",
    "vault",
    "backup",
    "version",
    "plan",
    "price",
    "team",
    "user",
    "token",
    "limit",
    "webhook",
    "event",
    "conflict",
    "copy",
    "clock",
    "server",
    "client",
    "update",
    "release",
    "theme",
    "policy",
    "vacation",
    "office",
    "travel",
    "meal",
    "receipt",
    "laptop",
    "buddy",
    "survey",
    "incident",
    "outage",
    "status",
    "postmortem",
    "encryption",
    "password",
    "account",
    "dashboard",
    "trash",
    "restore",
    "interval",
    "pattern",
    "ignore",
    "memory",
    "disk",
]


def paragraph(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


DIM = 64


def hashed_embedder(texts: Sequence[str]) -> list[list[float]]:
    """A cheap deterministic stand-in for a model: hashed bag of words, DIM dimensions."""
    out = []
    for text in texts:
        vec = [0.0] * DIM
        for word in text.split():
            vec[zlib.crc32(word.encode()) % DIM] += 1.0
        out.append(vec)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--chunks", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--file", type=Path, default=None, help="index file (default: temp)")
    parser.add_argument(
        "--hybrid",
        action="store_true",
        help="also store --dim hashed vectors and time hybrid (BM25 + vector) queries",
    )
    parser.add_argument(
        "--dim", type=int, default=64, help="vector dimension (all-MiniLM-L6-v2 has 384)"
    )
    parser.add_argument(
        "--no-sqlite-vec", action="store_true", help="compare vectors in pure Python"
    )
    args = parser.parse_args()
    global DIM
    DIM = args.dim
    if args.no_sqlite_vec:
        sys.modules["sqlite_vec"] = None  # type: ignore[assignment]
    rng = random.Random(7)
    chunks = [
        Chunk(source=f"doc{i // 20}.md", text=paragraph(rng, 120), ordinal=i % 20, heading="")
        for i in range(args.chunks)
    ]
    with tempfile.TemporaryDirectory() as tmp:
        path = args.file or Path(tmp) / "bench.sqlite"
        index = KnowledgeIndex(path, embedder=hashed_embedder if args.hybrid else None)
        start = time.perf_counter()
        index.add_chunks(chunks)
        build = time.perf_counter() - start
        queries = [" ".join(rng.choice(WORDS) for _ in range(4)) for _ in range(args.queries)]
        times = []
        for q in queries:
            t0 = time.perf_counter()
            index.search(q, top_k=5)
            times.append((time.perf_counter() - t0) * 1000)
        index.close()
    times.sort()
    p95 = times[int(len(times) * 0.95) - 1]
    print(
        f"build: {args.chunks} chunks in {build:.2f}s "
        f"({build / args.chunks * 1000 * 1000:.1f} ms per 1,000 chunks)"
    )
    backend = "sqlite-vec" if index.uses_sqlite_vec else "pure Python"
    kind = f"hybrid RRF, {DIM}-dim vectors via {backend}" if args.hybrid else "BM25"
    print(
        f"query ({kind}, top 5, {args.queries} queries): median {statistics.median(times):.2f} ms, "
        f"p95 {p95:.2f} ms"
    )


if __name__ == "__main__":
    main()
