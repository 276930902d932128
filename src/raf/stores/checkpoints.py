"""Checkpoints: the whole state of a run after a superstep, as plain JSON, and the stores
that keep them (in memory, one JSON file each, SQLite — the default)."""

from __future__ import annotations

import asyncio
import copy
import hashlib
import json
import os
import re
import sqlite3
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from raf.core.errors import AnswerClaimedError, CheckpointError, CheckpointNotFoundError
from raf.core.private_files import atomic_write_text, private_dir
from raf.stores.sqlite_file import PerThread, open_wal

CHECKPOINT_FORMAT = 1
"""Version of the JSON form of a checkpoint; a newer stored version is refused."""

DEFAULT_CHECKPOINT_PATH = ".raf/checkpoints.sqlite"
"""Where the default store keeps checkpoints (relative to the working directory), unless
the `RAF_CHECKPOINTS` environment variable names another file."""

Status = Literal["running", "paused", "completed", "compensated"]
_SAFE_ID = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")


@dataclass(kw_only=True, slots=True)
class Checkpoint:
    """Everything needed to continue a run after superstep `superstep`; values are
    already in their plain-JSON form."""

    id: str
    run_id: str
    workflow: str
    fingerprint: str
    superstep: int
    status: Status = "running"
    graph: dict[str, Any] = field(default_factory=dict)
    """The graph's nodes and edges as described when the checkpoint was written."""
    pending: list[dict[str, Any]] = field(default_factory=list)
    """Messages waiting for the next superstep: target, source, message."""
    fan_in: dict[str, dict[str, list[Any]]] = field(default_factory=dict)
    loop_counts: dict[str, int] = field(default_factory=dict)
    node_states: dict[str, Any] = field(default_factory=dict)
    shared_state: dict[str, Any] = field(default_factory=dict)
    requests: list[dict[str, Any]] = field(default_factory=list)
    outputs: list[Any] = field(default_factory=list)
    compensations: list[dict[str, Any]] = field(default_factory=list)
    """Finished nodes that have a compensation, in order, with the message they handled."""
    parent_id: str | None = None
    created_at: float = field(default_factory=time.time)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": CHECKPOINT_FORMAT,
            "id": self.id,
            "run_id": self.run_id,
            "workflow": self.workflow,
            "fingerprint": self.fingerprint,
            "superstep": self.superstep,
            "status": self.status,
            "graph": self.graph,
            "pending": self.pending,
            "fan_in": self.fan_in,
            "loop_counts": self.loop_counts,
            "node_states": self.node_states,
            "shared_state": self.shared_state,
            "requests": self.requests,
            "outputs": self.outputs,
            "compensations": self.compensations,
            "parent_id": self.parent_id,
            "created_at": self.created_at,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Checkpoint:
        if not isinstance(data, dict) or not isinstance(data.get("format"), int):
            raise CheckpointError("not a raf workflow checkpoint: the 'format' number is missing")
        if data["format"] > CHECKPOINT_FORMAT:
            raise CheckpointError(
                f"checkpoint {data.get('id')!r} was written in format {data['format']}, newer "
                f"than this raf understands ({CHECKPOINT_FORMAT}); upgrade raf-agents"
            )
        try:
            return cls(**{k: v for k, v in data.items() if k != "format"})
        except TypeError as exc:
            raise CheckpointError(f"checkpoint {data.get('id')!r} is damaged: {exc}") from None

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str | bytes, *, source: str = "checkpoint") -> Checkpoint:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CheckpointError(f"{source} is not valid JSON (truncated?): {exc}") from None
        return cls.from_dict(data)

    def info(self) -> CheckpointInfo:
        return CheckpointInfo(
            id=self.id,
            run_id=self.run_id,
            workflow=self.workflow,
            superstep=self.superstep,
            status=self.status,
            created_at=self.created_at,
        )


@dataclass(kw_only=True, slots=True)
class CheckpointInfo:
    """What a store lists about a checkpoint without loading it whole."""

    id: str
    run_id: str
    workflow: str
    superstep: int
    status: Status
    created_at: float


@runtime_checkable
class CheckpointStore(Protocol):
    """Keeps checkpoints between runs and processes: four methods, and `claim`, which
    makes each answer to a paused run count once."""

    async def save(self, checkpoint: Checkpoint) -> None: ...

    async def load(self, checkpoint_id: str) -> Checkpoint:
        """The stored checkpoint; `CheckpointNotFoundError` when there is none."""

    async def list(self, run_id: str | None = None) -> list[CheckpointInfo]:
        """Checkpoints (of one run, or all), newest first."""

    async def delete(self, checkpoint_id: str) -> bool:
        """Remove a checkpoint; False when there was none."""

    async def claim(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        """Take the answers to `request_ids` of a checkpoint for `claimant`, all or none,
        atomically for every process using the store; `AnswerClaimedError` when another
        claimant holds one of them. The same claimant may claim again (a retried step)."""

    async def release(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        """Give back what `claimant` took (its run failed before anything came of the
        answers): those requests may be answered again. Others' claims stay."""


def answer_claimed(checkpoint_id: str, request_id: str, claimed_at: float) -> AnswerClaimedError:
    """The refusal of an answer that another resume took first."""
    when = datetime.fromtimestamp(claimed_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return AnswerClaimedError(
        f"request {request_id!r} of checkpoint {checkpoint_id!r} was already answered "
        f"(at {when}); an answer is taken once: follow the run from its newest checkpoint",
        checkpoint_id=checkpoint_id,
        request_id=request_id,
    )


async def latest_checkpoint(store: CheckpointStore, run_id: str | None = None) -> CheckpointInfo:
    """The newest checkpoint of a run (or of any run)."""
    infos = await store.list(run_id)
    if not infos:
        where = f" of run {run_id!r}" if run_id else ""
        raise CheckpointNotFoundError(f"no checkpoint{where} is stored")
    return infos[0]


def _check_id(checkpoint_id: str) -> str:
    if not _SAFE_ID.match(checkpoint_id) or checkpoint_id in (".", ".."):
        raise CheckpointError(f"checkpoint id {checkpoint_id!r} is not valid")
    return checkpoint_id


class InMemoryCheckpointStore:
    """Checkpoints in this process. A checkpoint's values are already their plain-JSON
    form, freshly built, so they are kept as they are and copied on load."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[CheckpointInfo, Checkpoint]] = {}
        self._claims: dict[tuple[str, str], tuple[str, float]] = {}
        self._claiming = threading.Lock()

    async def save(self, checkpoint: Checkpoint) -> None:
        self._data[checkpoint.id] = (checkpoint.info(), checkpoint)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        try:
            _, checkpoint = self._data[checkpoint_id]
        except KeyError:
            raise CheckpointNotFoundError(f"no checkpoint {checkpoint_id!r} in memory") from None
        return Checkpoint.from_dict(copy.deepcopy(checkpoint.to_dict()))

    async def list(self, run_id: str | None = None) -> list[CheckpointInfo]:
        infos = [i for i, _ in self._data.values() if run_id is None or i.run_id == run_id]
        return infos[::-1]

    async def delete(self, checkpoint_id: str) -> bool:
        return self._data.pop(checkpoint_id, None) is not None

    async def claim(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        with self._claiming:
            for rid in request_ids:
                held = self._claims.get((checkpoint_id, rid))
                if held is not None and held[0] != claimant:
                    raise answer_claimed(checkpoint_id, rid, held[1])
            now = time.time()
            for rid in request_ids:
                self._claims.setdefault((checkpoint_id, rid), (claimant, now))

    async def release(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        with self._claiming:
            for rid in request_ids:
                held = self._claims.get((checkpoint_id, rid))
                if held is not None and held[0] == claimant:
                    del self._claims[(checkpoint_id, rid)]


class JsonFileCheckpointStore:
    """One `<id>.json` file per checkpoint in a directory, written atomically."""

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = Path(directory)

    def _path(self, checkpoint_id: str) -> Path:
        return self.directory / f"{_check_id(checkpoint_id)}.json"

    async def save(self, checkpoint: Checkpoint) -> None:
        await asyncio.to_thread(atomic_write_text, self._path(checkpoint.id), checkpoint.to_json())

    async def load(self, checkpoint_id: str) -> Checkpoint:
        path = self._path(checkpoint_id)
        try:
            text = await asyncio.to_thread(path.read_bytes)
        except FileNotFoundError:
            raise CheckpointNotFoundError(
                f"no checkpoint {checkpoint_id!r} in {self.directory}"
            ) from None
        return Checkpoint.from_json(text, source=str(path))

    async def list(self, run_id: str | None = None) -> list[CheckpointInfo]:
        def scan() -> list[CheckpointInfo]:
            if not self.directory.is_dir():
                return []
            infos = []
            for path in self.directory.glob("*.json"):
                if path.name.startswith("."):
                    continue
                info = Checkpoint.from_json(path.read_bytes(), source=str(path)).info()
                if run_id is None or info.run_id == run_id:
                    infos.append(info)
            infos.sort(key=lambda i: (i.created_at, i.superstep), reverse=True)
            return infos

        return await asyncio.to_thread(scan)

    async def delete(self, checkpoint_id: str) -> bool:
        path = self._path(checkpoint_id)

        def remove() -> bool:
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            return True

        return await asyncio.to_thread(remove)

    async def claim(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        # One file per answer, created with O_EXCL: the file system decides who was first.
        folder = self.directory / ".claims" / _check_id(checkpoint_id)

        def take() -> None:
            private_dir(folder)
            made: list[Path] = []
            try:
                for rid in sorted(set(request_ids)):
                    path = folder / hashlib.sha256(rid.encode()).hexdigest()[:40]
                    record = json.dumps({"claimant": claimant, "at": time.time()})
                    try:
                        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                    except FileExistsError:
                        held = _read_claim(path)
                        if held["claimant"] != claimant:
                            raise answer_claimed(checkpoint_id, rid, held["at"]) from None
                        continue
                    made.append(path)
                    with os.fdopen(fd, "w", encoding="utf-8") as handle:
                        handle.write(record)
                        handle.flush()
                        os.fsync(handle.fileno())
            except BaseException:
                for path in made:
                    path.unlink(missing_ok=True)
                raise

        await asyncio.to_thread(take)

    async def release(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        folder = self.directory / ".claims" / _check_id(checkpoint_id)

        def give_back() -> None:
            for rid in set(request_ids):
                path = folder / hashlib.sha256(rid.encode()).hexdigest()[:40]
                if path.exists() and _read_claim(path)["claimant"] == claimant:
                    path.unlink(missing_ok=True)

        await asyncio.to_thread(give_back)


def _read_claim(path: Path) -> dict[str, Any]:
    """A claim file; one still being written (empty) reads as another's fresh claim."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {"claimant": None, "at": time.time()}
    if not isinstance(data, dict):
        return {"claimant": None, "at": time.time()}
    return {"claimant": data.get("claimant"), "at": float(data.get("at", time.time()))}


_SCHEMA = """
CREATE TABLE IF NOT EXISTS raf_checkpoints (
    seq INTEGER PRIMARY KEY AUTOINCREMENT,
    id TEXT UNIQUE NOT NULL,
    run_id TEXT NOT NULL,
    workflow TEXT NOT NULL,
    superstep INTEGER NOT NULL,
    status TEXT NOT NULL,
    created_at REAL NOT NULL,
    data TEXT NOT NULL
)
"""
_CLAIMS_SCHEMA = """
CREATE TABLE IF NOT EXISTS raf_checkpoint_claims (
    checkpoint_id TEXT NOT NULL,
    request_id TEXT NOT NULL,
    claimant TEXT NOT NULL,
    claimed_at REAL NOT NULL,
    PRIMARY KEY (checkpoint_id, request_id)
)
"""


def _create_tables(conn: sqlite3.Connection) -> None:
    conn.execute(_SCHEMA)
    conn.execute(_CLAIMS_SCHEMA)


class SqliteCheckpointStore:
    """Checkpoints in one SQLite file (WAL): the default store; survives a killed process."""

    def __init__(self, path: str | os.PathLike[str] | None = None, *, timeout: float = 30.0):
        default = os.environ.get("RAF_CHECKPOINTS") or DEFAULT_CHECKPOINT_PATH
        self.path = Path(path if path is not None else default)
        self.timeout = timeout
        self._connections = PerThread(self._open)

    def _connect(self) -> sqlite3.Connection:
        return self._connections.get()

    def _open(self) -> sqlite3.Connection:
        return open_wal(self.path, self.timeout, _create_tables, self._refused)

    def _refused(self, exc: sqlite3.OperationalError) -> CheckpointError:
        return CheckpointError(f"cannot open {self.path}: {exc}")

    async def save(self, checkpoint: Checkpoint) -> None:
        text = checkpoint.to_json()

        def write() -> None:
            self._connect().execute(
                "INSERT OR REPLACE INTO raf_checkpoints "
                "(id, run_id, workflow, superstep, status, created_at, data) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)",
                (
                    checkpoint.id,
                    checkpoint.run_id,
                    checkpoint.workflow,
                    checkpoint.superstep,
                    checkpoint.status,
                    checkpoint.created_at,
                    text,
                ),
            )

        await asyncio.to_thread(write)

    async def load(self, checkpoint_id: str) -> Checkpoint:
        def read() -> str | None:
            row = (
                self._connect()
                .execute("SELECT data FROM raf_checkpoints WHERE id = ?", (checkpoint_id,))
                .fetchone()
            )
            return None if row is None else str(row[0])

        text = await asyncio.to_thread(read)
        if text is None:
            raise CheckpointNotFoundError(f"no checkpoint {checkpoint_id!r} in {self.path}")
        return Checkpoint.from_json(text, source=f"checkpoint {checkpoint_id!r} in {self.path}")

    async def list(self, run_id: str | None = None) -> list[CheckpointInfo]:
        def scan() -> list[CheckpointInfo]:
            query = (
                "SELECT id, run_id, workflow, superstep, status, created_at FROM raf_checkpoints"
            )
            args: tuple[str, ...] = ()
            if run_id is not None:
                query += " WHERE run_id = ?"
                args = (run_id,)
            rows = self._connect().execute(query + " ORDER BY seq DESC", args).fetchall()
            return [
                CheckpointInfo(
                    id=r[0],
                    run_id=r[1],
                    workflow=r[2],
                    superstep=r[3],
                    status=r[4],
                    created_at=r[5],
                )
                for r in rows
            ]

        return await asyncio.to_thread(scan)

    async def delete(self, checkpoint_id: str) -> bool:
        def remove() -> bool:
            conn = self._connect()
            cur = conn.execute("DELETE FROM raf_checkpoints WHERE id = ?", (checkpoint_id,))
            conn.execute(
                "DELETE FROM raf_checkpoint_claims WHERE checkpoint_id = ?", (checkpoint_id,)
            )
            return cur.rowcount > 0

        return await asyncio.to_thread(remove)

    async def claim(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        def take() -> None:
            conn = self._connect()
            # BEGIN IMMEDIATE takes the write lock first: a second process waits, then
            # sees the first one's rows.
            conn.execute("BEGIN IMMEDIATE")
            try:
                for rid in request_ids:
                    row = conn.execute(
                        "SELECT claimant, claimed_at FROM raf_checkpoint_claims "
                        "WHERE checkpoint_id = ? AND request_id = ?",
                        (checkpoint_id, rid),
                    ).fetchone()
                    if row is None:
                        conn.execute(
                            "INSERT INTO raf_checkpoint_claims VALUES (?, ?, ?, ?)",
                            (checkpoint_id, rid, claimant, time.time()),
                        )
                    elif row[0] != claimant:
                        raise answer_claimed(checkpoint_id, rid, float(row[1]))
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            conn.execute("COMMIT")

        await asyncio.to_thread(take)

    async def release(self, checkpoint_id: str, request_ids: Sequence[str], claimant: str) -> None:
        def give_back() -> None:
            self._connect().executemany(
                "DELETE FROM raf_checkpoint_claims "
                "WHERE checkpoint_id = ? AND request_id = ? AND claimant = ?",
                [(checkpoint_id, rid, claimant) for rid in request_ids],
            )

        await asyncio.to_thread(give_back)
