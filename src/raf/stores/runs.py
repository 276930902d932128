"""Runs as records in the session store: what a served run is (queued, running, done…),
in what order it came to its session, and the events it streamed, kept where every
process sharing the store reads them.

`SessionRuns` is the protocol a store implements beside `SessionLeases` (every store raf
ships does, in the same database as its sessions and leases); `LocalRuns` keeps them in
this process, for the memory store and as the fallback of a store that keeps none.
A record's fields other than the indexed ones travel as one JSON document (`to_dict`),
so a surface can keep what it needs in `extra` without a change of schema.
"""

from __future__ import annotations

import itertools
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any, Protocol, runtime_checkable

from raf.core.sessions import SessionStore

log = logging.getLogger("raf.sessions")

QUEUED = "queued"
RUNNING = "running"
WAITING = "waiting"
"""Ended its turn paused on a person: approvals or an input request to answer."""
DONE = "done"
FAILED = "failed"
CANCELLED = "cancelled"
RUN_STATES = (QUEUED, RUNNING, WAITING, DONE, FAILED, CANCELLED)
ENDED = frozenset({WAITING, DONE, FAILED, CANCELLED})
"""States after which a run does nothing more (a waiting run's answers start a new run)."""


@dataclass(kw_only=True, slots=True)
class RunRecord:
    """One run of an agent in a session, as every process sharing the store sees it."""

    id: str
    session: str
    """The stored id (key) of the session it runs in."""
    agent: str
    owner: str
    session_name: str = ""
    """The session's id as its owner knows it."""
    state: str = QUEUED
    seq: int = 0
    """Arrival order among all runs of the store, given by the store when it is added."""
    if_busy: str = "reject"
    background: bool = False
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    started_at: float | None = None
    """When it got its session (its turn came), by the clock of the process running it."""
    ended_at: float | None = None
    holder: str = ""
    """The process running it (or waiting to), as a lease holder names it."""
    alive_until: float = 0.0
    """While queued: when its process last promised to be there, plus the lease's length;
    a queued run past it is passed over (its process died)."""
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    webhook: str | None = None
    webhook_attempts: list[dict[str, Any]] = field(default_factory=list)
    events: int = 0
    """How many events were kept (numbered 1…events)."""
    events_capped: bool = False
    """More events came than a run may keep: those past the cap were not kept (the last,
    which ends the run, always is)."""
    cancel: str | None = None
    """Why a client or another run asked it to stop (kept apart: only `cancel_run`
    writes it, so a save never undoes a request to stop)."""
    expired: bool = False
    """Its events were removed after the retention time (`purge_runs`)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What a surface keeps with the run (its own ids, the input)."""

    @property
    def ended(self) -> bool:
        return self.state in ENDED

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> RunRecord:
        known = {k: v for k, v in data.items() if k in cls.__dataclass_fields__}
        return cls(**known)


RUN_COLUMNS = "seq, data, cancel, expired"
"""What a SQL store reads a record back from, in `stored_run`'s order."""


def run_json(run: RunRecord) -> str:
    """The record as a store keeps it in one document: every field but `seq`, `cancel`
    and `expired`, which a store keeps apart (its own sequence, the one write that
    `cancel_run` makes, the mark that `purge_runs` sets)."""
    data = run.to_dict()
    for kept_apart in ("seq", "cancel", "expired"):
        data.pop(kept_apart)
    return json.dumps(data, separators=(",", ":"))


def stored_run(seq: object, data: object, cancel: object, expired: object) -> RunRecord:
    """A record from what a store kept: its document (`run_json`) and the fields kept
    apart; `expired` counts as set when it is truthy."""
    run = RunRecord.from_dict(json.loads(str(data)))
    run.seq = int(str(seq))
    run.cancel = None if cancel is None else str(cancel)
    run.expired = bool(expired)
    return run


@runtime_checkable
class SessionRuns(Protocol):
    """Run records and their events, kept by the session store so that every process
    sharing it sees them (the queue of each session is its runs in `seq` order)."""

    async def add_run(self, run: RunRecord) -> RunRecord:
        """Store a new run; it is returned with its `seq` (arrival order across every
        process) set."""

    async def save_run(self, run: RunRecord) -> None:
        """Replace the stored run by `run`, all but its `seq` and `cancel`."""

    async def load_run(self, run_id: str) -> RunRecord | None:
        """The stored run; None when there is none."""

    async def cancel_run(self, run_id: str, reason: str) -> RunRecord | None:
        """Ask the run to stop (its `cancel` set, unless it ended); the run, or None."""

    async def session_runs(self, session: str, *, active: bool = False) -> list[RunRecord]:
        """The session's runs in arrival order; only those not ended when `active`."""

    async def add_run_events(self, run_id: str, first: int, events: Sequence[str]) -> None:
        """Keep `events` numbered `first`, `first + 1`, …"""

    async def run_events(self, run_id: str, after: int, limit: int = 500) -> list[tuple[int, str]]:
        """Up to `limit` kept events numbered above `after`, in order."""

    async def purge_runs(self, ended_before: float) -> int:
        """Remove the events of runs that ended before `ended_before` (their records stay,
        marked `expired`); how many runs."""


class LocalRuns:
    """Runs kept in this process: right for a store no other process reads, and the
    fallback for a store that keeps none of its own."""

    def __init__(self) -> None:
        self._runs: dict[str, RunRecord] = {}
        self._events: dict[str, dict[int, str]] = {}
        self._seq = itertools.count(1)

    async def add_run(self, run: RunRecord) -> RunRecord:
        # This process's own records need no copy on write: the record a run keeps is
        # the one stored (its `seq` set here); reads give copies, as a store elsewhere
        # would. A save of another object keeps what only the store writes.
        run.seq = next(self._seq)
        self._runs[run.id] = run
        return run

    async def save_run(self, run: RunRecord) -> None:
        held = self._runs.get(run.id)
        if held is None or held is run:
            return
        run.seq, run.cancel, run.expired = held.seq, held.cancel, held.expired
        self._runs[run.id] = run

    async def load_run(self, run_id: str) -> RunRecord | None:
        held = self._runs.get(run_id)
        return None if held is None else replace(held)

    async def cancel_run(self, run_id: str, reason: str) -> RunRecord | None:
        held = self._runs.get(run_id)
        if held is None:
            return None
        if not held.ended:
            held.cancel = reason
        return replace(held)

    async def session_runs(self, session: str, *, active: bool = False) -> list[RunRecord]:
        found = [
            replace(r)
            for r in self._runs.values()
            if r.session == session and not (active and r.ended_at is not None)
        ]
        return sorted(found, key=lambda r: r.seq)

    async def add_run_events(self, run_id: str, first: int, events: Sequence[str]) -> None:
        kept = self._events.setdefault(run_id, {})
        for offset, event in enumerate(events):
            kept[first + offset] = event

    async def run_events(self, run_id: str, after: int, limit: int = 500) -> list[tuple[int, str]]:
        kept = self._events.get(run_id, {})
        numbers = sorted(n for n in kept if n > after)[:limit]
        return [(n, kept[n]) for n in numbers]

    async def purge_runs(self, ended_before: float) -> int:
        count = 0
        for run in self._runs.values():
            if run.ended_at is not None and run.ended_at < ended_before and not run.expired:
                run.expired = True
                self._events.pop(run.id, None)
                count += 1
        return count


def runs_of(store: SessionStore) -> SessionRuns:
    """Where `store`'s runs are kept: the store itself when it keeps them (every store
    raf ships does), else this process's memory (a warning says so: other processes
    sharing the store see neither the runs nor their queue)."""
    if isinstance(store, SessionRuns):
        return store
    log.warning(
        "session store %s keeps no runs (add_run and friends): runs, their events and "
        "each session's queue are kept in this process only",
        type(store).__name__,
    )
    return LocalRuns()
