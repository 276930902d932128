"""`read_regular_file(root=)`: a file is read from inside its root only, also while
another thread swaps a folder on its path for a link that leads out."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from raf.core.safe_read import FileRefusedError, read_regular_file

READS = 20_000
"""The most reads the race test makes."""
SECONDS = 4.0
"""The longest the race test reads for (a bound on its run time, not a measurement)."""


def test_a_folder_swapped_for_a_link_during_the_walk_never_leads_outside(
    tmp_path: Path,
) -> None:
    """One thread swaps `root/a` between a folder and a link to a folder outside holding
    the same names, as fast as it can; another reads `root/a/sub/file` again and again.
    Every read either returns the inside file or is refused; none returns the outside one."""
    root = tmp_path / "root"
    (root / "a" / "sub").mkdir(parents=True)
    (root / "a" / "sub" / "file").write_bytes(b"inside")
    outside = tmp_path / "outside"
    (outside / "sub").mkdir(parents=True)
    (outside / "sub" / "file").write_bytes(b"OUTSIDE")
    folder, parked = root / "a", root / "a-parked"
    stop = threading.Event()
    swaps = 0

    def swap() -> None:
        nonlocal swaps
        while not stop.is_set():
            os.rename(folder, parked)
            os.symlink(outside, folder)
            os.unlink(folder)
            os.rename(parked, folder)
            swaps += 1

    swapper = threading.Thread(target=swap, daemon=True)
    seen: dict[str, int] = {"inside": 0, "outside": 0, "refused": 0}
    target = root / "a" / "sub" / "file"
    swapper.start()
    try:
        deadline = time.monotonic() + SECONDS
        for _ in range(READS):
            if time.monotonic() > deadline:
                break
            try:
                data = read_regular_file(target, limit=100, root=root)
            except (FileRefusedError, OSError):
                seen["refused"] += 1
                continue
            seen["inside" if data == b"inside" else "outside"] += 1
    finally:
        stop.set()
        swapper.join(timeout=30)
    assert not swapper.is_alive()
    assert swaps > 0 and seen["refused"] > 0, (swaps, seen)  # the race was run
    assert seen["outside"] == 0, seen


def test_a_link_on_the_path_that_appears_during_the_walk_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Between resolving the name and opening it, `a` becomes a link: the walk, which
    follows no link, refuses the read and says which folder changed."""
    root = tmp_path / "root"
    (root / "a").mkdir(parents=True)
    (root / "a" / "file").write_bytes(b"inside")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "file").write_bytes(b"OUTSIDE")
    resolve = os.path.realpath

    def resolve_then_swap(path: str | os.PathLike[str]) -> str:
        real = resolve(path)
        if os.fspath(path).endswith("file"):
            (root / "a").rename(root / "parked")
            (root / "a").symlink_to(outside)
        return real

    monkeypatch.setattr(os.path, "realpath", resolve_then_swap)
    with pytest.raises(FileRefusedError, match=r"'a' on its path .* a link"):
        read_regular_file(root / "a" / "file", limit=100, root=root)


def test_reads_inside_the_root_and_through_inside_links_go_on(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "deep" / "er").mkdir(parents=True)
    (root / "deep" / "er" / "file").write_bytes(b"data")
    (root / "short").symlink_to(root / "deep" / "er")
    assert read_regular_file(root / "deep" / "er" / "file", limit=10, root=root) == b"data"
    assert read_regular_file(root / "short" / "file", limit=10, root=root) == b"data"
    with pytest.raises(FileNotFoundError):
        read_regular_file(root / "deep" / "missing", limit=10, root=root)
    (root / "plain").write_bytes(b"x")
    with pytest.raises(NotADirectoryError):
        read_regular_file(root / "plain" / "file", limit=10, root=root)
