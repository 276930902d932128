"""One background worker per memory: consolidation jobs in order, latest wins per session."""

from __future__ import annotations

import asyncio
import logging
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

log = logging.getLogger("raf.context.memory")


@dataclass(kw_only=True, slots=True)
class ConsolidationJob:
    """The turns of one session waiting to be consolidated, and the model to use."""

    session_id: str
    turns: list[dict[str, str]] = field(default_factory=list)
    client: Any = None
    merged: int = 1
    """How many submitted jobs this one stands for (more than 1 after coalescing)."""
    receipts: list[Any] = field(default_factory=list)
    """What keeps the job on disk until it has run (see `journal.py`)."""


class ConsolidationWorker:
    """Runs jobs one at a time, in submission order. A job submitted for a session that
    already has one waiting replaces it (latest wins) and carries its turns along, so
    nothing is lost and the curator runs once for both."""

    def __init__(
        self,
        run_job: Callable[[ConsolidationJob], Awaitable[None]],
        *,
        finished: Callable[[ConsolidationJob], None] | None = None,
        dropped: Callable[[ConsolidationJob], None] | None = None,
    ) -> None:
        self._run_job = run_job
        self._finished = finished
        """Called when a job has run or failed for good."""
        self._dropped = dropped
        """Called for a job closed without running (it may run in a later process)."""
        self._pending: OrderedDict[str, ConsolidationJob] = OrderedDict()
        self._task: asyncio.Task[None] | None = None
        self._wakeup: asyncio.Event | None = None
        self._closed = False
        self._warned_other_loop = False
        self.running: ConsolidationJob | None = None
        self.completed = 0
        self.failed = 0
        self.coalesced = 0

    @property
    def pending(self) -> int:
        return len(self._pending)

    @property
    def idle(self) -> bool:
        return not self._pending and self.running is None

    def submit(self, job: ConsolidationJob) -> None:
        """Queue a job; never waits."""
        if self._closed:
            log.warning("memory worker is closed; consolidation of %s dropped", job.session_id)
            if self._dropped is not None:
                self._dropped(job)
            return
        waiting = self._pending.pop(job.session_id, None)
        if waiting is not None:
            job = ConsolidationJob(
                session_id=job.session_id,
                turns=[*waiting.turns, *job.turns],
                client=job.client,
                merged=waiting.merged + job.merged,
                receipts=[*waiting.receipts, *job.receipts],
            )
            self.coalesced += 1
        self._pending[job.session_id] = job
        self._ensure_task()

    def _ensure_task(self) -> None:
        """Start the worker task on the running loop when none is alive there.

        `run_sync` gives every run its own event loop; when such a loop ends it cancels
        the worker, whose unfinished job goes back to the queue (see `_loop`), and the
        next run or `drain`/`close` on any loop starts a new worker that picks it up.
        """
        loop = asyncio.get_running_loop()
        task = self._task
        if task is not None and not task.done() and not task.get_loop().is_closed():
            if task.get_loop() is loop:
                assert self._wakeup is not None
                self._wakeup.set()
                return
            if not self._warned_other_loop:
                log.warning("memory worker runs on another event loop; jobs wait for it there")
                self._warned_other_loop = True
            return
        if not self._pending:
            return
        self._wakeup = asyncio.Event()
        self._wakeup.set()
        self._task = loop.create_task(self._loop(), name="raf-memory-consolidation")

    async def _loop(self) -> None:
        wakeup = self._wakeup
        assert wakeup is not None
        while True:
            if not self._pending:
                wakeup.clear()
                await wakeup.wait()
                continue
            _, job = self._pending.popitem(last=False)
            self.running = job
            try:
                await self._run_job(job)
                self.completed += 1
            except asyncio.CancelledError:
                if not self._closed:
                    self._requeue(job)
                elif self._dropped is not None:
                    self._dropped(job)
                raise
            except Exception:
                self.failed += 1
                log.exception("memory consolidation of session %s failed", job.session_id)
            finally:
                self.running = None
            if self._finished is not None:
                self._finished(job)

    def _requeue(self, job: ConsolidationJob) -> None:
        """Put a job cut short by its event loop's end back at the head of the queue
        (merged with a newer job of its session), so no turn is lost."""
        newer = self._pending.pop(job.session_id, None)
        if newer is not None:
            job = ConsolidationJob(
                session_id=job.session_id,
                turns=[*job.turns, *newer.turns],
                client=newer.client,
                merged=job.merged + newer.merged,
                receipts=[*job.receipts, *newer.receipts],
            )
        self._pending[job.session_id] = job
        self._pending.move_to_end(job.session_id, last=False)
        log.info("memory consolidation of %s interrupted; queued again", job.session_id)

    async def drain(self, timeout_s: float | None = None) -> bool:
        """Wait until every queued job has run; False if `timeout_s` passed first."""

        async def until_idle() -> None:
            while not self.idle:
                self._ensure_task()
                task = self._task
                if task is None or task.done():
                    return
                await asyncio.sleep(0.01)

        try:
            await asyncio.wait_for(until_idle(), timeout_s)
        except TimeoutError:
            return False
        return True

    async def close(self, *, drain: bool = True, timeout_s: float = 30.0) -> None:
        """Stop taking jobs; finish the queued ones first when `drain` (up to
        `timeout_s`), then cancel whatever is left."""
        self._closed = True
        if drain and not await self.drain(timeout_s):
            log.warning(
                "memory worker: %d job(s) cancelled after waiting %ss",
                self.pending + (self.running is not None),
                timeout_s,
            )
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
        if self._dropped is not None:
            for job in self._pending.values():
                self._dropped(job)
        self._pending.clear()
