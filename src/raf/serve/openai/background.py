"""OpenAI Responses background mode: a response made with `background: true` is
answered at once (`queued` while its conversation has a run ahead of it, else
`in_progress`) and runs as a task of the process that accepted it, its client gone or
not.

Its response record (the one `GET /v1/responses/{id}` reads, in the shared store) is
written as it goes: queued, in progress, then its end (`completed`, `failed`,
`cancelled`), so any worker answers a poll. The run is a run record of the store
(`RunRecord`, with the response's id in `extra`), waiting its turn in its session's
queue as every run does, and its events are kept as that run's events, numbered by
`sequence_number` + 1, so `GET /v1/responses/{id}?stream=true&starting_after=N` streams
from any worker the events after `N`, none lost or repeated, until the response ends.
`POST /v1/responses/{id}/cancel` stops it wherever it runs (a queued one leaves the
queue) and marks it `cancelled`; a response that ended is answered as it is. A response
that finished while it was being cancelled stays `cancelled`, and may have kept its
turn in the conversation.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from collections.abc import Coroutine
from dataclasses import dataclass, field, fields
from typing import Any

from fastapi import Response
from fastapi.responses import JSONResponse

from raf.core.agent_like import AgentLike
from raf.core.errors import RafError, SessionError
from raf.core.messages import ChatMessage
from raf.core.sessions import AgentSession
from raf.serve.errors import ServeError
from raf.serve.hosting import AgentHost
from raf.serve.native.routes import SSE_HEADERS, EventStream
from raf.serve.openai.chat import invalid, stream_error
from raf.serve.openai.responses import (
    RESPONSE_KEY,
    RESPONSE_PREFIX,
    ResponseRun,
    responses_if_busy,
    start_updates,
)
from raf.serve.requests import error_for, json_line, store_failure
from raf.serve.runs import follow_events
from raf.serve.tenancy import Tenant
from raf.stores.leases import run_of
from raf.stores.records import change_record
from raf.stores.runs import CANCELLED, DONE, FAILED, RunRecord

log = logging.getLogger("raf.serve")

ENDED_STATUSES = frozenset({"completed", "failed", "cancelled", "incomplete"})
"""A response in one of these does nothing more."""

RESPONSE_OF_RUN = "response_id"
"""Key in a run record's `extra` naming the background response it makes."""


async def update_record(host: AgentHost, tenant: Tenant, record: dict[str, Any]) -> None:
    """Write a background response's record over the one kept: a response that ended is
    not moved back to a state before its end, and one cancelled stays cancelled (what
    else the new record says, its conversation's turn, is kept)."""
    status = record["response"]["status"]

    def change(kept: AgentSession) -> bool:
        new = record
        old = kept.metadata.get(RESPONSE_KEY)
        if isinstance(old, dict):
            was = old.get("response", {}).get("status")
            if was in ENDED_STATUSES and status not in ENDED_STATUSES:
                return False
            if was == "cancelled" and status != "cancelled":
                new = {**record, "response": {**record["response"], "status": "cancelled"}}
        kept.metadata[RESPONSE_KEY] = new
        return True

    await change_record(host.store, tenant.key(RESPONSE_PREFIX + record["response"]["id"]), change)


@dataclass(kw_only=True, slots=True)
class BackgroundRun(ResponseRun):
    """A response made in the background: its record names its run, and a run that was
    cancelled is recorded `cancelled`."""

    run: RunRecord | None = None

    async def _save(self, record: dict[str, Any]) -> None:
        assert self.run is not None
        kept = {**record, "run": self.run.id, "background": True}
        if self.active is not None and self.active.token.cancelled:
            kept["response"] = {**kept["response"], "status": "cancelled"}
        await update_record(self.host, self.tenant, kept)


@dataclass(kw_only=True, slots=True)
class LiveResponse:
    """A background response running in this process: its run and its events so far."""

    record: RunRecord
    events: list[tuple[int, str]] = field(default_factory=list)
    changed: asyncio.Event = field(default_factory=asyncio.Event)
    finished: bool = False


def sse(number: int, stored: str) -> str:
    """A kept event (its type, a newline, its JSON) as a server-sent event; its number
    is not sent (a client resumes by `starting_after`, the `sequence_number` inside)."""
    kind, _, data = stored.partition("\n")
    return f"event: {kind}\ndata: {data}\n\n"


class BackgroundResponses:
    """The background responses of one host: started here, kept in its store."""

    def __init__(self, host: AgentHost) -> None:
        self.host = host
        self.store = host.run_records
        self.live: dict[str, LiveResponse] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    def _spawn(self, work: Coroutine[Any, Any, None]) -> asyncio.Task[None]:
        task = asyncio.get_running_loop().create_task(work, name="raf-response")
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    async def start(
        self, agent: AgentLike, run: ResponseRun, messages: list[ChatMessage]
    ) -> Response:
        """Record the response as queued, start its run, and answer once it runs or
        waits its turn (its refusal, when it was refused before either, and nothing
        kept)."""
        host, tenant, request = self.host, run.tenant, run.request
        made = BackgroundRun(**{f.name: getattr(run, f.name) for f in fields(ResponseRun)})
        record = RunRecord(
            id=uuid.uuid4().hex,
            session="",
            agent=request.model,
            owner=tenant.owner,
            if_busy=responses_if_busy(request.if_busy) or host.if_busy,
            background=True,
            extra={RESPONSE_OF_RUN: made.id},
        )
        made.run = record
        admitted: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def on_queued(_: RunRecord) -> None:
            if not admitted.done():
                admitted.set_result("queued")

        def queueing(session_id: str | None) -> dict[str, Any]:
            name = session_id or uuid.uuid4().hex
            record.session_name = name
            record.session = tenant.key(name)
            given: dict[str, Any] = {"record": record, "on_queued": on_queued}
            if session_id is None:
                given["session_name"] = name
            return given

        try:
            await made._save(self._record(made, "queued"))
        except SessionError as exc:
            raise store_failure(exc) from None
        live = LiveResponse(record=record)
        self.live[record.id] = live
        self._spawn(self._drive(made, agent, messages, queueing, admitted, live))
        try:
            status = await asyncio.shield(admitted)
        except (ServeError, RafError):
            try:
                await host.store.delete(tenant.key(RESPONSE_PREFIX + made.id))
            except SessionError as exc:
                log.warning("could not remove refused response %s: %s", made.id, exc)
            raise
        if request.stream:
            return self._events(record.id, 0)
        return JSONResponse(made.body(status))

    @staticmethod
    def _record(run: ResponseRun, status: str) -> dict[str, Any]:
        return {
            "response": run.body(status),
            "agent": run.request.model,
            "session": None,
            "turn": -1,
        }

    async def _drive(
        self,
        run: BackgroundRun,
        agent: AgentLike,
        messages: list[ChatMessage],
        queueing: Any,
        admitted: asyncio.Future[str],
        live: LiveResponse,
    ) -> None:
        """Run the response to its end, keeping its events and its record."""
        record = live.record
        try:
            updates = await start_updates(self.host, agent, run, messages, queueing)
            if not admitted.done():  # it found its conversation free
                admitted.set_result("in_progress")
            await run._save({**self._record(run, "in_progress"), "session": run.session_id})
            async for event in run.events(updates):
                cancelled = run.active is not None and run.active.token.cancelled
                if event["type"] == "response.completed" and cancelled:
                    continue  # it did not complete: its record says cancelled
                await self._emit(live, event)
            cancelled = run.active is not None and run.active.token.cancelled
            record.state = CANCELLED if cancelled else FAILED if run.failure else DONE
        except BaseException as exc:
            served = error_for(exc) if isinstance(exc, Exception) else None
            if not admitted.done():  # refused before it ran or queued
                admitted.set_exception(exc if served is None else served)
                admitted.exception()  # seen here: the request answers it
                self.live.pop(record.id, None)
                if not isinstance(exc, Exception):
                    raise
                return
            cancelled = served is not None and served.code == "run_cancelled"
            record.state = CANCELLED if cancelled else FAILED
            if served is not None:
                error = stream_error(served)["error"]
                shown = {"code": error["code"], "message": error["message"]}
                status = "cancelled" if cancelled else "failed"
                body = run.body(status, error=None if cancelled else shown)
                try:
                    await run._save({**self._record(run, status), "response": body})
                except SessionError as unkept:
                    log.warning("background response %s not recorded: %s", run.id, unkept)
                if not cancelled:
                    await self._emit(live, run.event("response.failed", response=body))
            if not isinstance(exc, Exception):
                raise
        finally:
            if run.active is not None:
                await self.host.release(run.active)
            record.ended_at = record.updated_at = time.time()
            try:
                if record.seq:
                    await self.store.save_run(record)
            except SessionError as exc:
                log.warning("could not record the end of run %s: %s", record.id, exc)
            live.finished = True
            live.changed.set()
            self.live.pop(record.id, None)

    async def _emit(self, live: LiveResponse, event: dict[str, Any]) -> None:
        """Keep one event (numbered `sequence_number` + 1) where every reader finds it."""
        number = int(event["sequence_number"]) + 1
        stored = f"{event['type']}\n{json_line(event)}"
        live.events.append((number, stored))
        live.record.events = number
        live.changed.set()
        try:
            await self.store.add_run_events(live.record.id, number, [stored])
        except SessionError as exc:
            log.warning("could not keep response events of run %s: %s", live.record.id, exc)

    async def events(self, record: dict[str, Any], after: int) -> Response:
        """The response's events after `sequence_number` `after`, streamed as they come
        until the response ends."""
        run_id = str(record["run"])
        live = self.live.get(run_id)
        try:
            kept = live.record if live is not None else await self.store.load_run(run_id)
        except SessionError as exc:
            raise store_failure(exc) from None
        response_id = record["response"]["id"]
        if kept is None or kept.expired:
            raise ServeError(
                410,
                "response_events_expired",
                f"the events of response {response_id!r} are not kept any more (a run's "
                "events are kept for the server's retention time after it ends); GET it "
                "without stream for its output",
            )
        if kept.ended_at is not None and after + 1 > kept.events:
            raise invalid(
                "starting_after",
                f"response {response_id!r} has events 0 to {kept.events - 1}; "
                f"{after} is past its last",
            )
        return self._events(run_id, after + 1)

    def _events(self, run_id: str, sent: int) -> EventStream:
        """The run's kept events numbered above `sent` as a server-sent event stream,
        as they come, until it ended and every event was sent."""
        return EventStream(
            follow_events(self.live, self.store, run_id, sent, sse),
            media_type="text/event-stream",
            headers=SSE_HEADERS,
        )

    async def cancel(self, tenant: Tenant, record: dict[str, Any]) -> Response:
        """Stop the response wherever it runs and record it cancelled; one that ended is
        answered as it is."""
        response = record["response"]
        if response.get("status") in ENDED_STATUSES:
            return JSONResponse(response)
        run_id = str(record["run"])
        reason = "cancelled by the client"
        try:
            stored = await self.store.cancel_run(run_id, reason)
            if stored is not None and stored.session:
                active = self.host.runs.get(stored.session)
                if active is not None and active.run_id == run_id:  # it runs here
                    active.token.cancel(reason)
                else:  # elsewhere, or queued (its queue reads the request to stop)
                    lease = await self.host.leases.read_lease(stored.session)
                    if lease is not None and run_of(lease.holder) == run_id:
                        await self.host.leases.cancel_lease(stored.session, reason)
            cancelled = {**response, "status": "cancelled"}
            await update_record(self.host, tenant, {**record, "response": cancelled})
        except SessionError as exc:
            raise store_failure(exc) from None
        return JSONResponse(cancelled)

    async def close(self) -> None:
        """Stop the background responses of this process (the server is stopping)."""
        for task in list(self._tasks):
            task.cancel()


__all__ = ["BackgroundResponses", "update_record"]
