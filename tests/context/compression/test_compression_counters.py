"""Token counters: the estimate, tiktoken with a local table, and the offline fallback."""

from __future__ import annotations

from pathlib import Path

import pytest
import tiktoken
import tiktoken.load

from raf.core.tokens import (
    EstimatingCounter,
    TiktokenCounter,
    default_counter,
    tiktoken_cache_path,
    tiktoken_ready,
)


def byte_encoding() -> tiktoken.Encoding:
    """A real tiktoken encoding built locally: one token per byte of each word."""
    return tiktoken.Encoding(
        name="bytes",
        pat_str=r"\S+|\s+",
        mergeable_ranks={bytes([i]): i for i in range(256)},
        special_tokens={},
    )


def test_estimate_is_conservative() -> None:
    counter = EstimatingCounter()
    assert counter.count("") == 0
    assert counter.count("a" * 35) == 11
    text = "The quick brown fox jumps over the lazy dog. " * 20
    assert counter.count(text) >= len(text.split())


def test_tiktoken_counter_counts_with_a_real_encoding() -> None:
    counter = TiktokenCounter(byte_encoding())
    assert counter.count("abc de") == 6
    assert counter.count("<|endoftext|>") == len("<|endoftext|>")


def test_default_counter_falls_back_without_a_download(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))

    def no_network(blobpath: str) -> bytes:
        raise AssertionError(f"a download was tried: {blobpath}")

    monkeypatch.setattr(tiktoken.load, "read_file", no_network)
    assert not tiktoken_ready()
    counter = default_counter()
    assert isinstance(counter, EstimatingCounter)
    assert counter.count("a" * 35) == 11 and counter.count("") == 0  # counts as the estimate


def test_default_counter_uses_tiktoken_when_its_table_is_cached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))
    cached = tiktoken_cache_path("o200k_base")
    assert cached is not None and Path(cached).parent == tmp_path
    Path(cached).write_bytes(b"table")
    assert tiktoken_ready()
    monkeypatch.setattr(tiktoken, "get_encoding", lambda name: byte_encoding())
    counter = default_counter()
    assert isinstance(counter, TiktokenCounter) and counter.count("abcd") == 4


def test_default_counter_falls_back_when_tiktoken_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path))

    tried: list[str] = []

    def broken(name: str) -> tiktoken.Encoding:
        tried.append(name)
        raise ValueError("hash mismatch")

    monkeypatch.setattr(tiktoken, "get_encoding", broken)
    counter = default_counter(allow_download=True)
    assert tried == ["o200k_base"]  # tiktoken was tried, and its failure fell back
    assert isinstance(counter, EstimatingCounter)
    assert counter.count("a" * 35) == 11 and counter.count("") == 0
