"""Run locks per session: the in-process kind, and a holder that keeps one for a run.

Every store raf ships keeps its leases where it keeps its sessions (see each store), so
that processes sharing the store never run one session at once. `LocalLeases` serves a
store of one process (and any store that keeps no leases of its own); `HeldLease` takes a
lease for one run, renews it in the background while the run lasts, stops the run when
another process asks it to or when the lease was lost, and gives it back at the end.
`UnreleasedLeases` gives back, once the store answers again, the leases a run could not
give back because the store failed: a session is free for other workers as soon as the
store is back, not only when the lease lapses.
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

RELEASE_RETRY_FIRST = 0.05
"""Seconds before the first retry of giving back a lease the store failed to take back."""

RELEASE_RETRY_LONGEST = 1.0
"""Seconds at most between two retries: a session is free within about this once the
store answers again."""

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


class UnreleasedLeases:
    """Leases this process no longer uses but could not give back because the store
    failed (or could not tell whether it took them): given back in the background, tried
    again with back-off until the store answers, and forgotten once they would have
    lapsed anyway. A run of this process that finds one on its session gives it back at
    once (`HeldLease.take`)."""

    def __init__(self, leases: SessionLeases) -> None:
        self.leases = leases
        self._held: dict[tuple[str, str], float] = {}
        """(session id, holder) → when the lease lapses by itself (`time.monotonic`)."""
        self._task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._held)

    def add(self, session_id: str, holder: str, lapses: float) -> None:
        """Give this lease back as soon as the store answers; `lapses` is when it ends
        by itself (`time.monotonic`), after which nothing is left to give back."""
        key = (session_id, holder)
        self._held[key] = max(lapses, self._held.get(key, lapses))
        loop = asyncio.get_running_loop()
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            self._task = loop.create_task(self._retry(), name="raf-lease-release")

    def holds(self, session_id: str, holder: str) -> bool:
        """Whether `holder`'s lease on the session is one this process gave up."""
        return (session_id, holder) in self._held

    def discard(self, session_id: str, holder: str) -> None:
        """Forget a lease given back (or taken over) by other means."""
        self._held.pop((session_id, holder), None)

    async def _retry(self) -> None:
        """Give the leases back, oldest first; while the store fails, wait longer each
        time (up to `RELEASE_RETRY_LONGEST`) and try again."""
        delay = RELEASE_RETRY_FIRST
        while self._held:
            await asyncio.sleep(delay)
            delay = min(delay * 2, RELEASE_RETRY_LONGEST)
            for key, lapses in list(self._held.items()):
                if time.monotonic() >= lapses:
                    self._held.pop(key, None)
                    continue
                try:
                    await self.leases.release_lease(*key)
                except Exception as exc:  # the store is still away: all of them wait
                    log.debug("giving back the lease on session %r failed again: %s", key[0], exc)
                    break
                self._held.pop(key, None)
                delay = RELEASE_RETRY_FIRST
                log.info("gave back the lease on session %r once the store answered", key[0])


class HeldLease:
    """One run's lease on one session: taken, renewed while the run lasts (every third of
    its length, and at least every `LONGEST_RENEWAL_GAP` seconds), and given back.
    Cancels the run's token when another process asks (`cancel_lease`) or when the lease
    is lost (renewals failed past its end, or another run took it after it lapsed).
    A lease it cannot give back, or may have taken without knowing, goes to `unreleased`
    (when given), which gives it back once the store answers."""

    def __init__(
        self,
        leases: SessionLeases,
        session_id: str,
        holder: str,
        seconds: float,
        token: CancellationToken,
        unreleased: UnreleasedLeases | None = None,
    ) -> None:
        self.leases = leases
        self.session_id = session_id
        self.holder = holder
        self.seconds = seconds
        self.token = token
        self.unreleased = unreleased
        self._renewing: asyncio.Task[None] | None = None
        self._released = False
        self._lapses = 0.0
        """When the lease lapses unless renewed (`time.monotonic`), as far as known."""

    async def take(self) -> SessionLease:
        """Take the lease; the one that stands is returned (another run's when the
        session is busy: then nothing is held). A lease whose holder was a process of
        this machine that has exited, or a run of this process that could not give it
        back, is taken over at once, not after it lapses. When the store fails, the
        lease is given back later: the store may have taken it before failing."""
        try:
            lease = await self.leases.take_lease(self.session_id, self.holder, self.seconds)
            if lease.holder != self.holder and self._abandoned(lease.holder):
                log.info(
                    "session %r: its run %s has ended; taking the session over",
                    self.session_id,
                    run_of(lease.holder),
                )
                await self.leases.release_lease(self.session_id, lease.holder)
                if self.unreleased is not None:
                    self.unreleased.discard(self.session_id, lease.holder)
                lease = await self.leases.take_lease(self.session_id, self.holder, self.seconds)
        except Exception:
            if self.unreleased is not None:
                self.unreleased.add(self.session_id, self.holder, time.monotonic() + self.seconds)
            raise
        self._lapses = time.monotonic() + self.seconds
        if lease.holder == self.holder and math.isfinite(lease.expires_at):
            self._renewing = asyncio.get_running_loop().create_task(
                self._renew(time.monotonic() + self.seconds)
            )
        return lease

    def _abandoned(self, holder: str) -> bool:
        """Whether no run uses `holder`'s lease any more, as this process can tell: its
        process has exited, or it is a run of this process that could not give it back."""
        if self.unreleased is not None and self.unreleased.holds(self.session_id, holder):
            return True
        return holder_is_gone(holder)

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
        except Exception as exc:  # the run's outcome stands; the lease goes back later
            if self.unreleased is None:
                log.warning(
                    "giving back the lease on session %r failed (it lapses in %g s): %s",
                    self.session_id,
                    self.seconds,
                    exc,
                )
                return
            log.warning(
                "giving back the lease on session %r failed; it is given back once the "
                "store answers: %s",
                self.session_id,
                exc,
            )
            self.unreleased.add(self.session_id, self.holder, self._lapses)

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
            lapses = self._lapses = time.monotonic() + self.seconds
            if lease.cancel is not None:
                self.token.cancel(lease.cancel)
