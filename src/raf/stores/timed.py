"""A session store whose every call answers within a time limit: a server hosting agents
fails a request fast while its store is away (and says so on `/ready`), rather than
holding it for as long as a driver waits for a connection.

`TimedSessionStore` wraps any store and its leases: a call that takes longer than
`timeout` seconds, or fails in the operating system (a socket, a file), raises
`SessionStoreError`; the store's own errors pass through as they are.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import Awaitable, Sequence
from typing import Any, TypeVar

from raf.core.errors import SessionError, SessionStoreError
from raf.core.sessions import AgentSession, SessionLease, SessionLeases, SessionStore
from raf.stores.leases import leases_of
from raf.stores.runs import RunRecord, SessionRuns, runs_of

T = TypeVar("T")

DEFAULT_STORE_TIMEOUT = 2.0
"""Seconds a served request waits for one call of the session store: long enough for a
loaded store to answer, short enough that a load balancer sees a store outage (`/ready`
says 503) before it sends much traffic to a worker that cannot serve it."""

PROBE_ID = "raf-ready-probe"
"""The session `probe` asks for: whether it exists does not matter, only that the store
answers."""


class TimedSessionStore:
    """`inner` (a `SessionStore`) and its leases, each call bounded by `timeout` seconds.
    Other attributes are the inner store's (`close`, `where`, …)."""

    def __init__(self, inner: SessionStore, timeout: float = DEFAULT_STORE_TIMEOUT) -> None:
        if isinstance(timeout, bool) or not timeout > 0:
            raise ValueError(
                f"the store timeout must be a number of seconds above 0, not {timeout!r}"
            )
        self.inner = inner
        self.timeout = float(timeout)
        self.leases: SessionLeases = leases_of(inner)
        """The leases every call goes to (the store's own, or this process's)."""
        self.runs: SessionRuns = runs_of(inner)
        """The runs every run call goes to (the store's own, or this process's)."""

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def _bounded(self, what: str, call: Awaitable[T]) -> T:
        try:
            async with asyncio.timeout(self.timeout):
                return await call
        except TimeoutError:  # the limit's own, or a socket's (an OSError as well)
            raise SessionStoreError(
                f"{type(self.inner).__name__}: {what} did not answer within {self.timeout:g} s"
            ) from None
        except OSError as exc:
            raise SessionStoreError(f"{type(self.inner).__name__}: {what} failed: {exc}") from None

    # -- SessionStore -------------------------------------------------------------------

    async def save(self, session: AgentSession) -> None:
        await self._bounded("save", self.inner.save(session))

    async def load(self, session_id: str) -> AgentSession:
        return await self._bounded("load", self.inner.load(session_id))

    async def delete(self, session_id: str) -> bool:
        return await self._bounded("delete", self.inner.delete(session_id))

    async def list(self) -> list[str]:
        return await self._bounded("list", self.inner.list())

    # -- SessionLeases ------------------------------------------------------------------

    async def take_lease(self, session_id: str, holder: str, seconds: float) -> SessionLease:
        return await self._bounded(
            "take_lease", self.leases.take_lease(session_id, holder, seconds)
        )

    async def release_lease(self, session_id: str, holder: str) -> None:
        await self._bounded("release_lease", self.leases.release_lease(session_id, holder))

    async def read_lease(self, session_id: str) -> SessionLease | None:
        return await self._bounded("read_lease", self.leases.read_lease(session_id))

    async def cancel_lease(self, session_id: str, reason: str) -> SessionLease | None:
        return await self._bounded("cancel_lease", self.leases.cancel_lease(session_id, reason))

    # -- SessionRuns --------------------------------------------------------------------

    async def add_run(self, run: RunRecord) -> RunRecord:
        return await self._bounded("add_run", self.runs.add_run(run))

    async def save_run(self, run: RunRecord) -> None:
        await self._bounded("save_run", self.runs.save_run(run))

    async def load_run(self, run_id: str) -> RunRecord | None:
        return await self._bounded("load_run", self.runs.load_run(run_id))

    async def cancel_run(self, run_id: str, reason: str) -> RunRecord | None:
        return await self._bounded("cancel_run", self.runs.cancel_run(run_id, reason))

    async def session_runs(self, session: str, *, active: bool = False) -> builtins.list[RunRecord]:
        return await self._bounded("session_runs", self.runs.session_runs(session, active=active))

    async def add_run_events(self, run_id: str, first: int, events: Sequence[str]) -> None:
        await self._bounded("add_run_events", self.runs.add_run_events(run_id, first, events))

    async def run_events(
        self, run_id: str, after: int, limit: int = 500
    ) -> builtins.list[tuple[int, str]]:
        return await self._bounded("run_events", self.runs.run_events(run_id, after, limit))

    async def purge_runs(self, ended_before: float) -> int:
        return await self._bounded("purge_runs", self.runs.purge_runs(ended_before))

    # -- readiness ----------------------------------------------------------------------

    async def probe(self) -> None:
        """Return once the store answers one small question (a load of one id, however
        many sessions it keeps) and, for a store that can say so (`check_writable`: a
        SQLite file another connection may hold locked), could take a write now;
        `SessionStoreError` when it fails or takes too long."""
        try:
            await self.load(PROBE_ID)
        except SessionStoreError:
            raise
        except SessionError:  # none stored (or not one to read): the store answered
            pass
        check_writable = getattr(self.inner, "check_writable", None)
        if check_writable is not None:
            # its own wait ends a little before the bound, so its thread is not left held
            await self._bounded("write check", check_writable(self.timeout * 0.8))
