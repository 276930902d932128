"""A durable workflow run paused on a question, answered by two other processes at the
same moment: the answering node runs once, one process is refused by name, and the run
finishes with that one answer (system database in SQLite or PostgreSQL)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from raf.durable import sqlite_url
from tests.durable.helpers import finish, stop
from tests.durable.test_workers import fresh_database

APP = Path(__file__).with_name("answer_app.py")


def start(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(APP), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.fixture(params=["sqlite", "postgres"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    if request.param == "sqlite":
        return sqlite_url(tmp_path / "dbos.sqlite")
    return fresh_database(request.getfixturevalue("postgres_server"))


def test_two_processes_answering_one_durable_pause_run_the_node_once(
    tmp_path: Path, database: str
) -> None:
    asker = start("ask", database, str(tmp_path), "publish-1")
    answerers: list[subprocess.Popen[str]] = []
    try:
        assert asker.stdout is not None
        line = asker.stdout.readline().strip()
        if line != "paused":
            asker.kill()
            _, err = asker.communicate(timeout=30)
            raise AssertionError(f"the run did not pause ({line!r}):\n{err[-3000:]}")
        answerers = [start("answer", database, str(tmp_path), "publish-1", "2") for _ in range(2)]
        results = [json.loads(finish(p).strip().splitlines()[-1]) for p in answerers]
        outputs = json.loads(finish(asker).strip().splitlines()[-1])["outputs"]
    finally:
        for process in (asker, *answerers):
            stop(process)
    assert sorted(r["status"] for r in results) == ["completed", "refused"], results
    (refusal,) = [r for r in results if r["status"] == "refused"]
    assert "already answered" in refusal["error"]
    assert len((tmp_path / "answered.txt").read_text().splitlines()) == 1
    assert outputs == ["owls: True"]
