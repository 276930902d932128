"""Nothing a durable run loads can run code: DBOS records raf's JSON, and a pickle
planted in the system database is refused, never loaded."""

from __future__ import annotations

import asyncio
import base64
import pickle
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from raf import Agent
from raf.core.messages import ChatMessage
from raf.durable import (
    DurableRuntime,
    JsonSerializer,
    RecordedError,
    UnsafeRecordError,
    sqlite_url,
)
from raf.stores.sessions import SqliteSessionStore
from raf.testing import ScriptedChatClient


class _Planted:
    """Loading this pickle creates `path`: the proof that code ran."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self) -> tuple[Any, ...]:
        return (open, (str(self.path), "w"))


def pickled(value: object) -> str:
    return base64.b64encode(pickle.dumps(value)).decode()


def runtime(tmp_path: Path) -> DurableRuntime:
    agent = Agent(name="writer", chat_client=ScriptedChatClient(["hi", "again"]))
    return DurableRuntime(
        [agent],
        database=sqlite_url(tmp_path / "dbos.sqlite"),
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
    )


def finished_run(tmp_path: Path) -> None:
    """One run recorded and finished, in an event loop of its own (as another process
    would have left it)."""

    async def run() -> None:
        first = runtime(tmp_path)
        await first.launch()
        try:
            await first.run("writer", [ChatMessage.user("hello")], session_id="s1")
        finally:
            first.shutdown()

    asyncio.run(run())


def plant_pending(db: sqlite3.Connection, run_id: str, serialization: str | None) -> None:
    """A copy of the finished run, unfinished again under `run_id`."""
    columns = [r[1] for r in db.execute("PRAGMA table_info(workflow_status)")]
    row = dict(zip(columns, db.execute("SELECT * FROM workflow_status").fetchone(), strict=True))
    row.update(workflow_uuid=run_id, status="PENDING", serialization=serialization)
    row.update(output=None, error=None, completed_at=None)
    names, marks = ",".join(row), ",".join("?" * len(row))
    db.execute(f"INSERT INTO workflow_status ({names}) VALUES ({marks})", list(row.values()))


@pytest.mark.parametrize("serialization", ["py_pickle", None])
def test_a_planted_pickled_run_is_refused_at_launch_and_never_loaded(
    tmp_path: Path, serialization: str | None
) -> None:
    finished_run(tmp_path)
    marker = tmp_path / "code-ran"
    with sqlite3.connect(tmp_path / "dbos.sqlite") as db:
        plant_pending(db, "planted-run", serialization)
        inputs = pickled({"args": (_Planted(marker),), "kwargs": {}})
        db.execute(
            "INSERT INTO workflow_input (workflow_uuid, inputs) VALUES (?, ?)",
            ("planted-run", inputs),
        )
    second = runtime(tmp_path)
    with pytest.raises(UnsafeRecordError, match="planted-run.*pickle"):
        asyncio.run(second.launch())
    second.shutdown()
    assert not marker.exists()


def test_a_planted_pickled_step_result_is_refused_and_never_loaded(tmp_path: Path) -> None:
    finished_run(tmp_path)
    marker = tmp_path / "code-ran"
    with sqlite3.connect(tmp_path / "dbos.sqlite") as db:
        plant_pending(db, "planted-step", "raf_json")
        db.execute(
            "INSERT INTO workflow_input (workflow_uuid, inputs) "
            "SELECT 'planted-step', inputs FROM workflow_input LIMIT 1"
        )
        db.execute(
            "INSERT INTO operation_outputs (workflow_uuid, function_id, function_name, output, "
            "serialization) VALUES ('planted-step', 1, 'session:load', ?, 'py_pickle')",
            (pickled(_Planted(marker)),),
        )
    status = asyncio.run(recover(tmp_path))
    assert not marker.exists()
    assert status == "ERROR"


async def recover(tmp_path: Path) -> str:
    """Launch on the planted database; the status of the planted run once it ended."""
    second = runtime(tmp_path)
    await second.launch()  # the run is JSON: it is recovered, and its step result refused
    try:
        for _ in range(200):
            with sqlite3.connect(tmp_path / "dbos.sqlite") as db:
                status = str(
                    db.execute(
                        "SELECT status FROM workflow_status WHERE workflow_uuid = 'planted-step'"
                    ).fetchone()[0]
                )
            if status not in ("PENDING", "ENQUEUED"):
                return status
            await asyncio.sleep(0.05)
        return status
    finally:
        second.shutdown()


def test_the_serializer_writes_json_and_reads_only_json() -> None:
    serializer = JsonSerializer()
    text = serializer.serialize({"args": ({"a": [1, 2.5, None, True]},), "kwargs": {}})
    assert text == '{"args": [{"a": [1, 2.5, null, true]}], "kwargs": {}}'
    assert serializer.deserialize(text) == {"args": [{"a": [1, 2.5, None, True]}], "kwargs": {}}
    error = serializer.deserialize(serializer.serialize(ValueError("bad input")))
    assert isinstance(error, RecordedError)
    assert (error.error_type, str(error)) == ("ValueError", "bad input")
    with pytest.raises(Exception, match="cannot record a set as JSON"):
        serializer.serialize({1, 2})
    with pytest.raises(Exception, match="cannot record a dict as JSON.*int key"):
        serializer.serialize({1: "a"})
    with pytest.raises(UnsafeRecordError, match="not raf's JSON"):
        serializer.deserialize(pickled({"a": 1}))
