"""Background runs with `--durable`: each one a DBOS workflow on its agent's queue,
partitioned by session (one run of a session at a time, first come first served, over
every worker). The worker that runs it — or the one that recovers it after the first
died — writes its events and end into the run record, as a recorded step, so a client
re-attaching reads the same events an uninterrupted run gives, none lost or repeated."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from typing import Any

from raf.core.contents import ApprovalResponseContent
from raf.core.errors import SessionError
from raf.core.messages import ChatMessage, new_id
from raf.core.responses import (
    AgentResponseUpdate,
    AnswerCheck,
    UpdateKind,
    message_to_updates,
)
from raf.durable.codec import response_from_json
from raf.serve.answer_text import StreamedText
from raf.serve.double_texting import ENQUEUE
from raf.serve.durable_host import DurableAgentHost
from raf.serve.errors import ServeError
from raf.serve.hosting import public_id
from raf.serve.requests import json_line, store_failure
from raf.serve.runs import LiveRun, RunManager, public_run, result_body
from raf.stores.runs import CANCELLED, DONE, FAILED, RUNNING, WAITING, RunRecord

FIRST_EVENT_KEY = "durable_first_event"
"""Run-record key: the number of the first event its turn wrote (a recorder step that
runs again after a crash writes the same events at the same numbers)."""


class DurableRunManager(RunManager):
    """A `RunManager` whose background runs are durable workflows (foreground runs are
    the host's durable runs, as before)."""

    def __init__(self, host: DurableAgentHost, **options: Any) -> None:
        super().__init__(host, **options)
        self.durable_host = host
        host.runtime.turn_recorder = self.record_turn
        host.runtime.run_opener = self.open_scheduled_run

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
        """As `RunManager.start`; a background run is queued in the system database and
        answered at once, whichever worker then runs it."""
        if not background:
            return await super().start(
                agent,
                session_id,
                owner,
                messages,
                approvals,
                if_busy=if_busy,
                webhook=webhook,
                stream=stream,
            )
        self.host.agent(agent)
        if if_busy not in (None, ENQUEUE):
            refused = ServeError(
                422,
                "if_busy_not_supported",
                f"a durable background run waits its turn in its session's queue "
                f"(if_busy: enqueue); {if_busy!r} is for runs that are not background",
            )
            refused.param = "if_busy"
            raise refused
        if approvals:
            raise ServeError(
                422,
                "approvals_not_supported",
                "a durable background run takes messages; answer approvals with a foreground run",
            )
        if webhook is not None:
            await self.webhooks.check(webhook)
        session = (
            await self.host.create_session(agent, owner)
            if session_id is None
            else await self.host.session(agent, session_id, owner)
        )
        record = RunRecord(
            id=uuid.uuid4().hex,
            session=session.id,
            agent=agent,
            owner=owner,
            session_name=public_id(session),
            if_busy=ENQUEUE,
            background=True,
            webhook=webhook,
            events=1,
        )
        record.extra["input"] = [m.text for m in messages]
        first = json_line({"run_id": record.id, "session_id": record.session_name})
        try:
            record.seq = (await self.store.add_run(record)).seq
            await self.store.add_run_events(record.id, 1, [f"run\n{first}"])
        except SessionError as exc:
            raise store_failure(exc) from None
        await self.durable_host.runtime.start(
            agent, messages, session_id=session.id, run_id=record.id, recorded=True
        )
        live = LiveRun(record=record, messages=list(messages), approvals=[], streamed=True)
        live.admitted.set_result(None)
        return live

    async def open_scheduled_run(self, context: dict[str, Any], run_id: str) -> str:
        """Open a schedule's tick as a background run (`run_id` named after the tick):
        its session (the schedule's, or one named after the run; made when missing) and
        its run record, each only once however often this runs; the session's key."""
        agent, owner = str(context["agent"]), str(context.get("owner", ""))
        name = str(context.get("session") or run_id)
        try:
            session = await self.host.session(agent, name, owner)
        except ServeError as exc:
            if exc.status != 404:
                raise
            session = await self.host.create_session(agent, owner, session_id=name)
        if await self.store.load_run(run_id) is not None:
            return session.id
        record = RunRecord(
            id=run_id,
            session=session.id,
            agent=agent,
            owner=owner,
            session_name=name,
            if_busy=ENQUEUE,
            background=True,
            events=1,
        )
        record.extra.update(
            input=[str(context["input"])], schedule=context.get("label"), tick=context["tick"]
        )
        first = json_line({"run_id": run_id, "session_id": name})
        record.seq = (await self.store.add_run(record)).seq
        await self.store.add_run_events(run_id, 1, [f"run\n{first}"])
        return session.id

    async def record_turn(self, request: dict[str, Any], turn: int, out: dict[str, Any]) -> None:
        """Write a background run's first turn (to its end or its approval pause) into
        its record: the events a streamed run sends, then the result. A paused run ends
        there, as any run does; the answers to its approvals are a run of their own."""
        if turn > 0:
            return
        record = await self.store.load_run(str(request["record"]))
        if record is None or record.ended_at is not None:
            return  # removed, or cancelled while it ran
        first = record.extra.get(FIRST_EVENT_KEY)
        if not isinstance(first, int):
            first = record.extra[FIRST_EVENT_KEY] = record.events + 1
            record.state, record.started_at = RUNNING, record.started_at or time.time()
            await self.store.save_run(record)
        events: list[str] = []
        error = out.get("error")
        if error is not None:
            body = {
                "error": {"code": "run_failed", "message": f"{error['type']}: {error['message']}"}
            }
            events.append(f"error\n{json_line(body)}")
            record.state, record.error = FAILED, body["error"]
        else:
            response = response_from_json(out["response"])
            check = AnswerCheck()
            joined = StreamedText()
            updates: list[AgentResponseUpdate] = []
            for message in response.messages:
                updates.extend(message_to_updates(message, message.message_id or new_id("msg")))
            updates.append(
                AgentResponseUpdate(
                    kind=UpdateKind.FINISHED,
                    finish_reason=response.finish_reason,
                    usage=response.usage,
                )
            )
            for update in updates:
                check.see(update)
                data = update.to_dict()
                piece = joined.piece(update)
                if piece:
                    data["text"] = piece
                events.append(f"update\n{json_line(data)}")
            record.result = result_body(response, record)
            if check.problem is not None:
                record.result["error"] = check.problem.to_dict()
                events.append(f"error\n{json_line({'error': check.problem.to_dict()})}")
            record.state = WAITING if response.pending_approvals else DONE
        await self.store.add_run_events(record.id, first, events)
        record.events = first + len(events) - 1
        record.ended_at = record.updated_at = time.time()
        await self.store.save_run(record)
        if record.webhook:
            body_bytes = json.dumps(public_run(record), separators=(",", ":")).encode()
            self._spawn(
                self.webhooks.deliver(record, body_bytes, self.store.save_run), "raf-webhook"
            )

    async def cancel(self, agent: str, run_id: str, owner: str) -> RunRecord:
        """As `RunManager.cancel`; a durable background run's workflow is cancelled in
        the system database (queued or running, in any worker) and its record ended."""
        record = await self.get(agent, run_id, owner)
        if not record.background or record.ended_at is not None:
            return await super().cancel(agent, run_id, owner)
        reason = "cancelled by the client"
        await self.durable_host.runtime.cancel(run_id)
        try:
            stored = await self.store.cancel_run(run_id, reason)
            record = stored if stored is not None else record
            if record.ended_at is None:
                record.state, record.cancel = CANCELLED, reason
                record.ended_at = record.updated_at = time.time()
                await self.store.save_run(record)
        except SessionError as exc:
            raise store_failure(exc) from None
        return record


__all__ = ["DurableRunManager"]
