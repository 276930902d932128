"""Runs as resources: each native run (foreground or background) is a record in the
shared store with its events, so any worker reports its state, streams its events from
any point (`Last-Event-ID`), cancels it, and calls its webhook when it ends.

A run executes in the process that accepted it, as a task of its own: a client that
leaves does not stop it (it re-attaches through `GET …/runs/{id}/events`, or cancels it).
Its events are written to the store in small batches while it runs; readers in this
process follow them as they come, readers elsewhere poll the store.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from raf.core.contents import ApprovalResponseContent, content_to_dict
from raf.core.errors import SessionError
from raf.core.messages import ChatMessage
from raf.core.responses import AnswerCheck, ChatResponse, ResponseFolder, answer_problem
from raf.serve.answer_text import StreamedText, answer_text
from raf.serve.errors import ServeError, not_found
from raf.serve.hosting import AgentHost
from raf.serve.requests import error_for, json_line, store_failure
from raf.serve.tenancy import Tenant
from raf.serve.webhooks import Webhooks
from raf.stores.leases import run_of
from raf.stores.runs import CANCELLED, DONE, FAILED, WAITING, RunRecord, SessionRuns

log = logging.getLogger("raf.serve")

DEFAULT_RUN_RETENTION = 7 * 24 * 3600.0
"""Seconds a run's events are kept after it ends (its record stays, marked expired)."""

DEFAULT_RUN_EVENTS = 10_000
"""Events one run keeps at most; past it only the run's last event is kept."""

FLUSH_SECONDS = 0.1
"""Longest a streamed event waits before it is written to the store (in a batch)."""

FOLLOW_POLL_SECONDS = 0.1
"""How often a reader in another process looks for a run's new events."""

PURGE_EVERY_SECONDS = 60.0
"""Runs past retention are purged at most this often per process (when a run ends; as
often as the retention time when that is shorter)."""


@dataclass(kw_only=True, slots=True)
class LiveRun:
    """A run executing in this process: its record, its events, and who waits on it."""

    record: RunRecord
    messages: list[ChatMessage]
    approvals: list[ApprovalResponseContent]
    new_session: bool = False
    streamed: bool = False
    """Its updates are events a client may follow (a streamed or background run)."""
    events: list[tuple[int, str]] = field(default_factory=list)
    """Every event kept, numbered as in the store."""
    unflushed: list[tuple[int, str]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    admitted: asyncio.Future[None] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )
    """Done once the run runs or waits in its session's queue; its error when it was
    refused before either."""
    failure: BaseException | None = None
    finished: bool = False
    flush_soon: asyncio.TimerHandle | None = None
    """The timer that writes the events not written yet."""
    task: asyncio.Task[None] | None = None


def public_run(record: RunRecord) -> dict[str, Any]:
    """A run's JSON form for its owner (no store keys, owners or process names)."""
    return {
        "id": record.id,
        "object": "run",
        "agent": record.agent,
        "session_id": record.session_name,
        "state": record.state,
        "input": record.extra.get("input", []),
        "if_busy": record.if_busy,
        "background": record.background,
        "seq": record.seq,
        "created_at": record.created_at,
        "started_at": record.started_at,
        "updated_at": record.updated_at,
        "ended_at": record.ended_at,
        "result": record.result,
        "error": record.error,
        "cancel_reason": record.cancel,
        "webhook": record.webhook,
        "webhook_attempts": record.webhook_attempts,
        "events": record.events,
        "events_capped": record.events_capped,
        "events_expired": record.expired,
    }


def result_body(response: ChatResponse, record: RunRecord) -> dict[str, Any]:
    """A finished run's result, as a foreground JSON run answers it: the response, the
    session's and run's ids, the text (every model call's, joined with a blank line),
    the approvals it waits on, and an `error` object when the answer is not whole
    (empty, cut off, filtered; the run is recorded all the same)."""
    data = response.to_dict()
    data["session_id"] = record.session_name
    data["run_id"] = record.id
    data["text"] = answer_text(response)
    data["pending_approvals"] = [content_to_dict(p) for p in response.pending_approvals]
    problem = answer_problem(response)
    if problem is not None:
        data["error"] = problem.to_dict()
    return data


def sse_event(number: int, stored: str) -> str:
    """One stored event (`name`, a newline, its JSON data) as server-sent event text,
    with its number as the event id."""
    name, _, data = stored.partition("\n")
    return f"id: {number}\nevent: {name}\ndata: {data}\n\n"


class Followed(Protocol):
    """A run executing in this process as a reader follows it: its events so far, set
    when one more comes, and whether it has ended."""

    events: list[tuple[int, str]]
    changed: asyncio.Event
    finished: bool


async def follow_events(
    live: Mapping[str, Followed],
    store: SessionRuns,
    run_id: str,
    after: int,
    formatted: Callable[[int, str], str],
) -> AsyncIterator[str]:
    """Run `run_id`'s events numbered above `after`, each as `formatted` writes it (its
    number, the kept event), as they come, until the run has ended and every kept event
    was sent: from this process's `live` run while it runs here, else from the store,
    polled while the run goes on in another process."""
    sent = after
    while True:
        running = live.get(run_id)
        if running is not None:
            running.changed.clear()
            fresh = [e for e in running.events if e[0] > sent]
            for number, stored in fresh:
                yield formatted(number, stored)
                sent = number
            if running.finished:
                return
            if not fresh:
                await running.changed.wait()
            continue
        rows = await store.run_events(run_id, sent)
        for number, stored in rows:
            yield formatted(number, stored)
            sent = number
        if rows:
            continue
        record = await store.load_run(run_id)
        if record is None or record.expired:
            return
        if record.ended_at is not None and record.events <= sent:
            return
        await asyncio.sleep(FOLLOW_POLL_SECONDS)


class RunManager:
    """The native runs of one host: started here, recorded in the host's store."""

    def __init__(
        self,
        host: AgentHost,
        *,
        retention: float = DEFAULT_RUN_RETENTION,
        events_cap: int = DEFAULT_RUN_EVENTS,
        webhooks: Webhooks | None = None,
    ) -> None:
        self.host = host
        self.store = host.run_records
        self.retention = float(retention)
        self.events_cap = int(events_cap)
        self.webhooks = webhooks if webhooks is not None else Webhooks(None)
        self.live: dict[str, LiveRun] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._purged = 0.0

    # -- starting -----------------------------------------------------------------------

    async def start(
        self,
        agent: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage],
        approvals: Sequence[ApprovalResponseContent] = (),
        *,
        if_busy: str | None = None,
        background: bool = False,
        webhook: str | None = None,
        stream: bool = False,
    ) -> LiveRun:
        """Start a run as a task of its own; it is returned once admitted (running or
        queued), or its refusal is raised (404, 409 …) as the request's error."""
        self.host.agent(agent)
        if webhook is not None:
            await self.webhooks.check(webhook)
        new = session_id is None
        name = uuid.uuid4().hex if session_id is None else session_id
        key = Tenant(owner).key(name) if new else self.host._key(name, owner)
        record = RunRecord(
            id=uuid.uuid4().hex,
            session=key,
            agent=agent,
            owner=owner,
            session_name=name,
            if_busy=self.host.if_busy if if_busy is None else if_busy,
            background=background,
            webhook=webhook,
        )
        record.extra["input"] = [m.text for m in messages]
        live = LiveRun(
            record=record,
            messages=list(messages),
            approvals=list(approvals),
            new_session=new,
            streamed=stream or background,
        )
        if background:  # readable at once, from any worker, while it waits or runs
            if not new:  # an unknown session is a 404 now, not a failed run later
                await self.host.session(agent, name, owner)
            try:
                record.seq = (await self.store.add_run(record)).seq
            except SessionError as exc:
                raise store_failure(exc) from None
        self.live[record.id] = live
        if not live.streamed:
            # a JSON request that is not streamed waits for the end in this task: a
            # client that leaves does not cancel it (nothing reads its disconnect)
            await self._drive(live)
            live.admitted.result()  # its refusal, when it was refused before it ran
            return live
        self._emit(live, "run", {"run_id": record.id, "session_id": name})
        live.task = self._spawn(self._drive(live), "raf-run")
        if not background:
            await asyncio.shield(live.admitted)
        return live

    def _spawn(self, work: Coroutine[Any, Any, None], name: str) -> asyncio.Task[None]:
        """A task of this manager, kept until it ends (stopped by `close`)."""
        task = asyncio.get_running_loop().create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def _admitted(self, _: RunRecord, live: LiveRun) -> None:
        if not live.admitted.done():
            live.admitted.set_result(None)

    async def _drive(self, live: LiveRun) -> None:
        """Run it to its end: wait its turn, run it (streamed as events when a client
        may follow them: a streamed or background run), record the outcome, call the
        webhook."""
        record = live.record
        try:
            if live.streamed:
                result, cancelled = await self._run_streamed(live)
            else:
                result, cancelled = await self._run_whole(live)
            record.result = result
            if cancelled:
                record.state = CANCELLED
            elif result["pending_approvals"]:
                record.state = WAITING
            else:
                record.state = DONE
        except BaseException as exc:
            served = error_for(exc) if isinstance(exc, Exception) else None
            if not live.admitted.done():  # refused before it ran or queued
                live.admitted.set_exception(exc if served is None else served)
                live.admitted.exception()  # seen here: the waiter re-raises it
            else:
                live.failure = exc
                if served is not None:
                    self._emit(live, "error", served.body())
            cancelled = served is not None and served.code == "run_cancelled"
            record.state = CANCELLED if cancelled else FAILED
            record.error = served.body()["error"] if served is not None else None
            if not isinstance(exc, Exception):
                raise
        finally:
            if live.flush_soon is not None:
                live.flush_soon.cancel()
            record.ended_at = record.updated_at = time.time()
            await self._end(live)

    def _queueing(self, live: LiveRun) -> dict[str, Any]:
        """What the host needs to queue and record the run."""
        record = live.record
        return {
            "if_busy": record.if_busy,
            "record": record,
            "on_queued": lambda queued: self._admitted(queued, live),
            "session_name": record.session_name if live.new_session else None,
        }

    async def _run_whole(self, live: LiveRun) -> tuple[dict[str, Any], bool]:
        """A run no client follows (JSON, foreground): its result, and whether it was
        cancelled. Its events are `run` and, when it fails, `error`."""
        record = live.record
        response, active = await self.host.run(
            record.agent,
            None if live.new_session else record.session_name,
            record.owner,
            live.messages,
            live.approvals,
            **self._queueing(live),
        )
        if not live.admitted.done():
            live.admitted.set_result(None)
        return result_body(response, record), active.token.cancelled

    async def _run_streamed(self, live: LiveRun) -> tuple[dict[str, Any], bool]:
        """A run whose updates are its events: its result, and whether it was
        cancelled."""
        record = live.record
        check = AnswerCheck()
        folder = ResponseFolder()
        active, updates = await self.host.stream(
            record.agent,
            None if live.new_session else record.session_name,
            record.owner,
            live.messages,
            live.approvals,
            **self._queueing(live),
        )
        if not live.admitted.done():
            live.admitted.set_result(None)
        joined = StreamedText()
        async for update in updates:
            check.see(update)
            folder.add(update)
            data = update.to_dict()
            piece = joined.piece(update)
            if piece:  # the text as the whole answer's `text` has it
                data["text"] = piece
            self._emit(live, "update", data)
        result = result_body(folder.response(), record)
        problem = check.problem
        if problem is not None:
            result["error"] = problem.to_dict()
            self._emit(live, "error", {"error": problem.to_dict()})
        return result, active.token.cancelled

    async def _end(self, live: LiveRun) -> None:
        """Write what is left of the events and the final record; then the webhook."""
        record = live.record
        try:
            await self._flush(live)
            if record.seq:  # a foreground run refused before it ran was never recorded
                await self.store.save_run(record)
        except SessionError as exc:
            log.warning("could not record the end of run %s: %s", record.id, exc)
        finally:
            live.finished = True
            live.changed.set()
            self.live.pop(record.id, None)
        if record.webhook and record.seq:
            body = json.dumps(public_run(record), separators=(",", ":")).encode()
            self._spawn(self.webhooks.deliver(record, body, self.store.save_run), "raf-webhook")
        await self._purge()

    async def _purge(self) -> None:
        now = time.monotonic()
        if now - self._purged < min(PURGE_EVERY_SECONDS, self.retention):
            return
        self._purged = now
        try:
            await self.store.purge_runs(time.time() - self.retention)
        except SessionError as exc:
            log.warning("could not remove runs past retention: %s", exc)

    # -- events -------------------------------------------------------------------------

    def _emit(self, live: LiveRun, name: str, data: dict[str, Any]) -> None:
        record = live.record
        if record.events >= self.events_cap - 1 and name == "update":
            record.events_capped = True  # the cap keeps one place for the run's last event
            return
        record.events += 1
        item = (record.events, f"{name}\n{json_line(data)}")
        live.events.append(item)
        live.unflushed.append(item)
        live.changed.set()
        if live.flush_soon is None and live.streamed:  # a timer, not a task: most runs
            # end before it fires, and their events are written once, at the end
            live.flush_soon = asyncio.get_running_loop().call_later(
                FLUSH_SECONDS, self._flush_later, live
            )

    async def _flush(self, live: LiveRun) -> None:
        batch, live.unflushed = live.unflushed, []
        if batch and live.record.seq:
            try:
                await self.store.add_run_events(live.record.id, batch[0][0], [e for _, e in batch])
            except BaseException:
                live.unflushed[:0] = batch
                raise

    def _flush_later(self, live: LiveRun) -> None:
        """Write the events not written yet, in a task of their own (a timer's)."""
        live.flush_soon = None
        if live.unflushed and not live.finished:
            self._spawn(self._flush_quietly(live), "raf-run-events")

    async def _flush_quietly(self, live: LiveRun) -> None:
        try:
            await self._flush(live)
        except SessionError as exc:
            log.warning("could not keep run %s's events yet: %s", live.record.id, exc)

    async def follow(self, run_id: str, after: int) -> AsyncIterator[str]:
        """The run's events numbered above `after` as server-sent events, as they come,
        until the run has ended and every kept event was sent."""
        async for text in follow_events(self.live, self.store, run_id, after, sse_event):
            yield text

    # -- reading and cancelling ---------------------------------------------------------

    async def get(self, agent: str, run_id: str, owner: str) -> RunRecord:
        """The caller's run `run_id` of `agent`; a 404 for any other (another caller's
        run is not told apart from one that does not exist)."""
        self.host.agent(agent)
        live = self.live.get(run_id)
        if live is not None:
            record: RunRecord | None = live.record
        else:
            try:
                record = await self.store.load_run(run_id)
            except SessionError as exc:
                raise store_failure(exc) from None
        if record is None or record.agent != agent or not Tenant(owner).owns(record.owner):
            raise not_found("run", run_id)
        return record

    async def events_from(self, agent: str, run_id: str, owner: str, after: int) -> RunRecord:
        """The run whose events a reader asks for after event `after`; a 410 when they
        were removed after the retention time, a 416-like 409 when `after` is ahead."""
        record = await self.get(agent, run_id, owner)
        if record.expired:
            raise ServeError(
                410,
                "run_events_expired",
                f"run {run_id}'s events were removed: a run's events are kept "
                f"{self.retention:g} s after it ends; its record (GET the run) stays",
                run_id=run_id,
            )
        if after < 0 or (record.ended_at is not None and after > record.events):
            raise ServeError(
                409,
                "invalid_event_id",
                f"Last-Event-ID {after} is not an event of run {run_id} (it has "
                f"{record.events}); resume from an id it sent",
                run_id=run_id,
            )
        return record

    async def cancel(self, agent: str, run_id: str, owner: str) -> RunRecord:
        """Ask the caller's run to stop: at once when it runs in this process, else
        through the store (a queued run leaves the queue; a running one stops when its
        process next renews its session's lease). A 409 once it has ended."""
        record = await self.get(agent, run_id, owner)
        if record.ended_at is not None:
            raise ServeError(
                409,
                "run_ended",
                f"run {run_id} has ended already ({record.state}); nothing to cancel",
                run_id=run_id,
            )
        reason = "cancelled by the client"
        try:
            stored = await self.store.cancel_run(run_id, reason)
            active = self.host.runs.get(record.session)
            if active is not None and active.run_id == run_id:  # it runs here
                active.token.cancel(reason)
            else:  # it runs in another process, or waits in the queue (which reads it)
                lease = await self.host.leases.read_lease(record.session)
                if lease is not None and run_of(lease.holder) == run_id:
                    await self.host.leases.cancel_lease(record.session, reason)
        except SessionError as exc:
            raise store_failure(exc) from None
        return stored if stored is not None else record

    async def session_runs(self, agent: str, session_id: str, owner: str) -> list[RunRecord]:
        """The caller's session's runs, in arrival order (a 404 for another's session)."""
        session = await self.host.session(agent, session_id, owner)
        try:
            return await self.store.session_runs(session.id)
        except SessionError as exc:
            raise store_failure(exc) from None

    async def close(self) -> None:
        """Stop waiting on webhooks and runs of this process (the server is stopping)."""
        for task in list(self._tasks):
            task.cancel()


__all__ = [
    "DEFAULT_RUN_EVENTS",
    "DEFAULT_RUN_RETENTION",
    "Followed",
    "LiveRun",
    "RunManager",
    "follow_events",
    "public_run",
    "sse_event",
]
