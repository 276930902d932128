"""One knowledge index shared by several processes, and one whose file is damaged: no
IntegrityError, no orphaned full-text rows, no raw sqlite3 error."""

from __future__ import annotations

import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raf.context.knowledge import KnowledgeIndex, KnowledgeIndexDamagedError

ROOT = Path(__file__).resolve().parents[3]

SYNCER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from raf.context.knowledge import KnowledgeIndex

    index_path, docs, worker = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
    for round_ in range(12):
        # each process rewrites a few shared files, then syncs the whole folder
        for n in range(worker, 24, 3):
            (docs / f"doc{n}.md").write_text(
                f"# Doc {n}\\n\\n" + f"round {round_} worker {worker} topic{n} " * 60
            )
        index = KnowledgeIndex(index_path, max_chars=300, overlap=30)
        index.sync(docs)
        index.close()
    """
)


def _orphans(path: Path) -> tuple[int, int, int]:
    with sqlite3.connect(path) as db:
        fts_orphans = db.execute(
            "SELECT count(*) FROM chunks_fts WHERE rowid NOT IN (SELECT id FROM chunks)"
        ).fetchone()[0]
        missing_fts = db.execute(
            "SELECT count(*) FROM chunks WHERE id NOT IN (SELECT rowid FROM chunks_fts)"
        ).fetchone()[0]
        stray_chunks = db.execute(
            "SELECT count(*) FROM chunks WHERE source NOT IN (SELECT source FROM files)"
        ).fetchone()[0]
    return int(fts_orphans), int(missing_fts), int(stray_chunks)


def test_processes_syncing_one_index_never_collide_nor_orphan_rows(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    index_path = tmp_path / "k.db"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", SYNCER, str(index_path), str(docs), str(n)],
            stderr=subprocess.PIPE,
            env=env,
        )
        for n in range(3)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err.decode()[-3000:]
    assert _orphans(index_path) == (0, 0, 0)
    index = KnowledgeIndex(index_path, max_chars=300, overlap=30)
    stats = index.sync(docs)
    assert stats.added == 0 and stats.removed == 0
    assert len(index.sources()) == 24
    assert index.search("topic7")[0].source.endswith("doc7.md")
    index.close()


def test_a_damaged_index_file_is_rebuilt_with_a_warning(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nthe aardvark sleeps in the afternoon\n")
    path = tmp_path / "k.db"
    index = KnowledgeIndex(path)
    index.sync(docs)
    index.close()
    path.write_bytes(b"this is not a database at all" * 200)
    with caplog.at_level(logging.WARNING, logger="raf.context.knowledge"):
        index = KnowledgeIndex(path)
    assert str(path) in caplog.text and "rebuilt" in caplog.text
    assert index.sync(docs).added == 1
    assert index.search("aardvark")[0].source.endswith("a.md")
    assert (tmp_path / "k.db.damaged").exists()  # kept for whoever wants to look
    index.close()


def test_damage_found_while_searching_is_a_clear_error_then_healed(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\n" + "the aardvark sleeps in the afternoon " * 400)
    path = tmp_path / "k.db"
    index = KnowledgeIndex(path, max_chars=300, overlap=0)
    index.sync(docs)
    index.close()
    data = bytearray(path.read_bytes())
    page = 4096
    for offset in range(2 * page, len(data), page):  # keep the header and schema page
        data[offset : offset + page] = b"\xff" * page
    path.write_bytes(bytes(data))
    try:
        index = KnowledgeIndex(path, max_chars=300, overlap=0)
    except Exception as exc:
        pytest.fail(f"opening raised {type(exc).__name__}: {exc}")
    try:
        hits = index.search("aardvark")
    except KnowledgeIndexDamagedError as exc:
        assert str(path) in str(exc) and "sync" in str(exc)
        hits = []
    assert isinstance(hits, list)
    index.sync(docs)
    assert index.search("aardvark")[0].source.endswith("a.md")
    index.close()
