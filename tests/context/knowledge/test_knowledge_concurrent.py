"""The knowledge index while its files and its database change under it: a file deleted
during a sync is left out and recorded, an oversized file is refused before it is read,
searches see one snapshot while another process syncs, and a file with zeroed pages is
found damaged when opened and rebuilt."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import textwrap
import tracemalloc
from pathlib import Path

import pytest

import raf
from raf.context.knowledge import Document, KnowledgeIndex, RecursiveChunker
from raf.context.knowledge import loaders as knowledge_loaders
from raf.context.knowledge.chunkers import Chunk
from raf.core.errors import ConfigurationError


class DeletingChunker:
    """Chunks like the default and deletes `victim` while the first document is chunked:
    a file removed after the sync listed the folder."""

    def __init__(self, victim: Path) -> None:
        self.victim = victim
        self.inner = RecursiveChunker()

    def chunk(self, document: Document) -> list[Chunk]:
        self.victim.unlink(missing_ok=True)
        return self.inner.chunk(document)


def test_a_file_deleted_during_a_sync_is_left_out_and_recorded(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nthe aardvark\n")
    (docs / "b.md").write_text("# B\n\nthe badger\n")
    index = KnowledgeIndex(tmp_path / "k.db", chunker=DeletingChunker(docs / "b.md"))
    stats = index.sync(docs)
    assert stats.added == 1 and stats.vanished == [str(docs / "b.md")]
    assert [h.source for h in index.search("aardvark")] == [str(docs / "a.md")]
    assert index.search("badger") == []

    (docs / "b.md").write_text("# B\n\nthe badger\n")
    index.chunker = None
    assert index.sync(docs).added == 1
    (docs / "a.md").write_text("# A\n\nthe aardvark, changed\n")
    index.chunker = DeletingChunker(docs / "b.md")
    stats = index.sync(docs)  # b was indexed, then deleted while a was re-read
    assert stats.vanished == [str(docs / "b.md")] and stats.removed == 1
    assert index.sources() == [str(docs / "a.md")]
    index.close()


def test_an_oversized_file_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(knowledge_loaders, "MAX_SOURCE_BYTES", 1_000_000)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "huge.md").write_bytes(b"word " * 6_000_000)  # 30 MB
    index = KnowledgeIndex(tmp_path / "k.db")
    tracemalloc.start()
    try:
        with pytest.raises(ConfigurationError, match=r"huge\.md.*larger than 1000000 bytes"):
            index.sync(docs)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 5_000_000, f"{peak} bytes were allocated to refuse the file"
    index.close()


SYNCER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from raf.context.knowledge import KnowledgeIndex

    index_path, docs, rounds = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    index = KnowledgeIndex(index_path, max_chars=200, overlap=0)
    for round_ in range(rounds):
        for n in range(20):  # every document changes, so all its chunks are replaced
            (docs / f"doc{n}.md").write_text(
                f"# Doc {n}\\n\\n" + f"round {round_} everywhere filler{n} " * 40
            )
        index.sync(docs)
    index.close()
    print("done")
    """
)


def test_searches_see_one_snapshot_while_another_process_syncs(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(20):
        (docs / f"doc{n}.md").write_text(f"# Doc {n}\n\n" + f"everywhere filler{n} " * 40)
    path = tmp_path / "k.db"
    index = KnowledgeIndex(path, max_chars=200, overlap=0)
    index.sync(docs)
    src = str(Path(raf.__file__).resolve().parents[1])
    proc = subprocess.Popen(
        [sys.executable, "-c", SYNCER, str(path), str(docs), "40"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env={**os.environ, "PYTHONPATH": src},
    )
    empty = searches = 0
    try:
        while proc.poll() is None:
            searches += 1
            if not index.search("everywhere", top_k=5):
                empty += 1
        out, err = proc.communicate(timeout=240)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    assert proc.returncode == 0 and out.strip() == b"done", err.decode()[-3000:]
    assert searches > 20
    assert empty == 0, f"{empty} of {searches} searches came back empty"
    index.close()


def test_an_index_file_with_zeroed_pages_is_found_damaged_and_rebuilt(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    for n in range(30):
        (docs / f"doc{n}.md").write_text(f"# Doc {n}\n\n" + f"aardvark{n} sleeps " * 200)
    path = tmp_path / "k.db"
    index = KnowledgeIndex(path, max_chars=300, overlap=0)
    index.sync(docs)
    index.close()
    data = bytearray(path.read_bytes())
    middle = len(data) // 2 // 4096 * 4096
    data[middle : middle + 8192] = bytes(8192)  # 8 KB zeroed, as a failing disk leaves
    path.write_bytes(bytes(data))
    with caplog.at_level(logging.WARNING, logger="raf.context.knowledge"):
        index = KnowledgeIndex(path, max_chars=300, overlap=0)
    assert "damaged" in caplog.text and str(path) in caplog.text
    assert (tmp_path / "k.db.damaged").exists()
    assert index.count() == 0  # rebuilt empty, not answering from what was left
    index.sync(docs)
    assert index.search("aardvark7")[0].source.endswith("doc7.md")
    index.close()
