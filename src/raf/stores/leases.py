"""Run locks per session: the in-process kind, and a holder that keeps one for a run.

Every store raf ships keeps its leases where it keeps its sessions (see each store), so
that processes sharing the store never run one session at once. `LocalLeases` serves a
store of one process (and any store that keeps no leases of its own); `HeldLease` takes a
lease for one run, renews it in the background while the run lasts, stops the run when
another process asks it to or when the lease was lost, and gives it back at the end.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import math
import os
import time
from dataclasses import replace

from raf.core.cancellation import CancellationToken
from raf.core.sessions import SessionLease, SessionLeases, SessionStore

log = logging.getLogger("raf.sessions")

DEFAULT_LEASE_SECONDS = 30.0
"""How long a run's lease lasts without renewal: a worker that dies holding a session
frees it this long after its last renewal."""

LONGEST_RENEWAL_GAP = 2.0
"""Seconds at most between two renewals of a held lease (a third of its length when that
is shorter): a cancel asked from another process reaches the run within about this."""


@functools.cache
def _machine() -> str:
    """What tells this kernel and pid namespace from others ('' where it cannot be told):
    a pid means one process only among holders that share it."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            boot = handle.read().strip()
        namespace = os.readlink("/proc/self/ns/pid")
    except OSError:
        return ""
    return f"{boot}/{namespace.removeprefix('pid:').strip('[]')}"


def holder_id(run_id: str) -> str:
    """The holder name of a run of this process: the run's id, then where it runs (so a
    process on the same machine can tell that the holder is gone)."""
    return f"{run_id}@{_machine()}/{os.getpid()}"


def run_of(holder: str) -> str:
    """The run id in a holder name."""
    return holder.split("@", 1)[0]


def holder_is_gone(holder: str) -> bool:
    """Whether `holder` names a process of this machine and pid namespace that has
    exited: its lease need not wait to lapse. False whenever that cannot be told."""
    _, _, where = holder.partition("@")
    machine, _, pid = where.rpartition("/")
    if not machine or machine != _machine() or not pid.isdigit():
        return False
    if int(pid) == os.getpid():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except OSError:  # it exists (another user's, say)
        return False
    return False


def lease_after(
    held: SessionLease | None, session_id: str, holder: str, seconds: float, now: float
) -> SessionLease | None:
    """The lease `holder` gets by taking or renewing at `now` over `held` (the stored
    one), or None when another holder's lease still stands. A renewal keeps a cancel
    request; a new holder starts without one."""
    if held is not None and held.holder != holder and held.expires_at > now:
        return None
    keep = held is not None and held.holder == holder
    return SessionLease(
        session_id=session_id,
        holder=holder,
        expires_at=now + seconds,
        cancel=held.cancel if keep and held is not None else None,
    )


def standing(held: SessionLease | None, now: float) -> SessionLease | None:
    """`held` while it has not lapsed at `now`; None once it has."""
    return held if held is not None and held.expires_at > now else None


class LocalLeases:
    """Leases kept in this process: right for a store no other process reads (its holders
    cannot die apart from it, so a lease never lapses) and the fallback for a store that
    keeps none of its own."""

    def __init__(self) -> None:
        self._leases: dict[str, SessionLease] = {}

    async def take_lease(self, session_id: str, holder: str, seconds: float) -> SessionLease:
        held = self._leases.get(session_id)
        if held is not None and held.holder != holder:
            return held
        lease = SessionLease(
            session_id=session_id,
            holder=holder,
            expires_at=math.inf,
            cancel=None if held is None else held.cancel,
        )
        self._leases[session_id] = lease
        return lease

    async def release_lease(self, session_id: str, holder: str) -> None:
        held = self._leases.get(session_id)
        if held is not None and held.holder == holder:
            del self._leases[session_id]

    async def read_lease(self, session_id: str) -> SessionLease | None:
        return self._leases.get(session_id)

    async def cancel_lease(self, session_id: str, reason: str) -> SessionLease | None:
        held = self._leases.get(session_id)
        if held is None:
            return None
        held = self._leases[session_id] = replace(held, cancel=reason)
        return held


def leases_of(store: SessionStore) -> SessionLeases:
    """Where the runs of `store`'s sessions take their leases: the store itself when it
    keeps them (every store raf ships does), else leases of this process only (a warning
    says so: other processes sharing such a store are not kept out)."""
    if isinstance(store, SessionLeases):
        return store
    log.warning(
        "session store %s keeps no leases (take_lease and friends): runs are kept one per "
        "session within this process only, not across processes sharing the store",
        type(store).__name__,
    )
    return LocalLeases()


class HeldLease:
    """One run's lease on one session: taken, renewed while the run lasts (every third of
    its length, and at least every `LONGEST_RENEWAL_GAP` seconds), and given back.
    Cancels the run's token when another process asks (`cancel_lease`) or when the lease
    is lost (renewals failed past its end, or another run took it after it lapsed)."""

    def __init__(
        self,
        leases: SessionLeases,
        session_id: str,
        holder: str,
        seconds: float,
        token: CancellationToken,
    ) -> None:
        self.leases = leases
        self.session_id = session_id
        self.holder = holder
        self.seconds = seconds
        self.token = token
        self._renewing: asyncio.Task[None] | None = None
        self._released = False

    async def take(self) -> SessionLease:
        """Take the lease; the one that stands is returned (another run's when the
        session is busy: then nothing is held). A lease whose holder was a process of
        this machine that has exited is taken over at once, not after it lapses."""
        lease = await self.leases.take_lease(self.session_id, self.holder, self.seconds)
        if lease.holder != self.holder and holder_is_gone(lease.holder):
            log.info(
                "session %r: its run %s ended with its process; taking the session over",
                self.session_id,
                run_of(lease.holder),
            )
            await self.leases.release_lease(self.session_id, lease.holder)
            lease = await self.leases.take_lease(self.session_id, self.holder, self.seconds)
        if lease.holder == self.holder and math.isfinite(lease.expires_at):
            self._renewing = asyncio.get_running_loop().create_task(
                self._renew(time.monotonic() + self.seconds)
            )
        return lease

    async def release(self) -> None:
        """Stop renewing and give the lease back; safe to call twice."""
        if self._released:
            return
        self._released = True
        renewing, self._renewing = self._renewing, None
        if renewing is not None:
            renewing.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await renewing
        try:
            await self.leases.release_lease(self.session_id, self.holder)
        except Exception as exc:  # it lapses by itself; the run's outcome stands
            log.warning(
                "giving back the lease on session %r failed (it lapses in %g s): %s",
                self.session_id,
                self.seconds,
                exc,
            )

    async def _renew(self, lapses: float) -> None:
        """Renew until released; stop the run when it must stop."""
        while True:
            await asyncio.sleep(min(self.seconds / 3, LONGEST_RENEWAL_GAP))
            try:
                lease = await self.leases.take_lease(self.session_id, self.holder, self.seconds)
            except Exception as exc:
                if time.monotonic() >= lapses:
                    self.token.cancel(
                        f"the lease on session {self.session_id!r} lapsed: the session store "
                        f"could not be reached to renew it ({exc})"
                    )
                    return
                log.warning("renewing the lease on session %r failed: %s", self.session_id, exc)
                continue
            if lease.holder != self.holder:
                self.token.cancel(
                    f"the lease on session {self.session_id!r} lapsed and run "
                    f"{run_of(lease.holder)} took the session"
                )
                return
            lapses = time.monotonic() + self.seconds
            if lease.cancel is not None:
                self.token.cancel(lease.cancel)
