"""`DurableRuntime`: agent runs as DBOS workflows on a SQLite or PostgreSQL system
database, queued per agent, paused durably on approvals, resumed after a crash."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from dbos import DBOS, DBOSConfig, EnqueueOptions, SetWorkflowID

from raf.core.agent_like import AgentLike
from raf.core.contents import ApprovalResponseContent, content_from_dict, content_to_dict
from raf.core.errors import RafError, SessionNotFoundError
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions
from raf.core.private_files import private_file
from raf.core.responses import AgentResponse
from raf.core.sessions import AgentSession, SessionStore
from raf.durable.codec import response_from_json, response_to_json
from raf.durable.schedules import (
    DOCUMENT_PREFIX,
    SCHEDULE_PREFIX,
    RunOpener,
    Schedule,
    check_cron,
    tick_run_id,
)
from raf.durable.serializer import (
    SCHEDULED_WORKFLOW,
    JsonSerializer,
    UnsafeRecordError,
    refuse_pickles,
    unfinished_unsafe_runs,
)
from raf.durable.steps import DURABLE_MIDDLEWARE
from raf.durable.workers import Heartbeat, LaunchLock
from raf.durable.workflows import (
    RESPONSES_TOPIC,
    WORKFLOW_RUN_NAME,
    WorkflowFactory,
    WorkflowOutcome,
    advance,
    answers_message,
    build_workflow,
    outcome_of,
    read_answers,
    workflow_queue_name,
)
from raf.workflow.codec import encode

DURABLE_KEY = "raf_durable"
"""Session metadata key naming the durable run that waits for approvals in it."""

APPROVALS_TOPIC = "raf.approvals"
"""The DBOS message topic on which a paused run receives its approval answers."""

DEFAULT_APPROVAL_WAIT = 30 * 24 * 3600.0
"""How long a paused run waits for answers (seconds) before it ends, leaving the
session's approvals pending for a later run to answer."""

WORKFLOW_NAME = "raf.agent_run"

TurnRecorder = Callable[[dict[str, Any], int, dict[str, Any]], Awaitable[None]]
"""Writes what one turn of a run with a run record came to (the request, the turn, the
turn's outcome as the workflow publishes it) into that record; it runs as a recorded
step, so it must be idempotent (a step killed half-way runs again)."""


class DurableRunError(RafError):
    """A durable run ended with an error (its type and message are kept)."""

    def __init__(self, message: str, *, error_type: str, run_id: str) -> None:
        super().__init__(message)
        self.error_type = error_type
        self.run_id = run_id


@dataclass(kw_only=True, slots=True)
class TurnOutcome:
    """What one turn of a durable run came to: a response (finished, or paused with
    approvals pending) and the turn to wait for after answering them."""

    run_id: str
    turn: int
    response: AgentResponse

    @property
    def paused(self) -> bool:
        return bool(self.response.pending_approvals)


def queue_name(agent_name: str) -> str:
    """The DBOS queue the runs of one agent wait in: partitioned by session, one run of
    a session at a time over all workers (first come, first served)."""
    return f"raf-agent-{agent_name}"


def sqlite_url(path: str | Path) -> str:
    """A system-database URL for a SQLite file."""
    return f"sqlite:///{Path(path).resolve()}"


_current: DurableRuntime | None = None


def current_runtime() -> DurableRuntime:
    """The runtime launched in this process (DBOS has one per process)."""
    if _current is None:
        raise RafError("no DurableRuntime is launched in this process: call launch() first")
    return _current


class DurableRuntime:
    """Runs agents durably: each run a DBOS workflow, each model and tool call a step."""

    def __init__(
        self,
        agents: Mapping[str, AgentLike] | Sequence[AgentLike],
        *,
        store: SessionStore,
        database: str = "sqlite:///raf-durable.sqlite",
        concurrency: int | Mapping[str, int] | None = None,
        executor_id: str | None = None,
        app_name: str = "raf",
        approval_wait: float = DEFAULT_APPROVAL_WAIT,
        heartbeat_interval: float = 1.0,
        takeover_after: float = 10.0,
        queue_polling: float = 0.05,
        workflows: Mapping[str, WorkflowFactory] | None = None,
    ) -> None:
        if isinstance(agents, Mapping):
            self.agents = dict(agents)
        else:
            self.agents = {a.name: a for a in agents}
        for agent in self.agents.values():
            if getattr(agent, "session_store", None) is not None:
                raise RafError(
                    f"agent {agent.name!r} saves its own sessions; a durable run saves them "
                    "as recorded steps, so give the store to DurableRuntime(store=...) instead"
                )
        if not (database.startswith(("sqlite:///", "postgresql://", "postgres://"))):
            raise RafError(
                f"system database {database!r} is not a sqlite:///PATH or postgresql:// URL"
            )
        self.store = store
        self.workflows = dict(workflows or {})
        """Workflows by name, each a factory (a workflow object serves one run at a time)."""
        self.database = database
        self.concurrency = concurrency
        self.executor_id = executor_id
        self.app_name = app_name
        self.approval_wait = approval_wait
        self.queue_polling = queue_polling
        self.heartbeat = Heartbeat(
            database,
            executor_id=executor_id or "local",
            interval=heartbeat_interval,
            takeover_after=takeover_after,
        )
        self.launched = False
        self.turn_recorder: TurnRecorder | None = None
        """Set by the server: records each turn of a run that has a run record (a
        background run), in whichever worker runs or recovers it."""
        self.run_opener: RunOpener | None = None
        """Set by the server: opens a scheduled tick's run as a run record."""

    # -- life -------------------------------------------------------------------------

    async def launch(self) -> None:
        """Start DBOS (recovering runs this executor left unfinished), the agents' queues
        and the heartbeat that lets other workers take over if this one dies. Call it from
        inside the event loop that will await the runs."""
        global _current
        if _current is not None:
            raise RafError("a DurableRuntime is launched in this process already")
        config: DBOSConfig = {
            "name": self.app_name,
            "system_database_url": self.database,
            "log_level": os.environ.get("RAF_DURABLE_LOG_LEVEL", "WARNING"),
            "notification_listener_polling_interval_sec": 0.05,
            # a schedule made on one worker starts ticking on the others this soon
            "scheduler_polling_interval_sec": 2.0,
            "serializer": JsonSerializer(),
        }
        if self.executor_id is not None:
            config["executor_id"] = self.executor_id
        _current = self
        lock = LaunchLock(self.database)
        try:
            if self.database.startswith("sqlite:///"):
                await asyncio.to_thread(_wal, Path(self.database[len("sqlite:///") :]))
            refuse_pickles()
            await asyncio.to_thread(lock.acquire)
            try:
                unsafe = await asyncio.to_thread(unfinished_unsafe_runs, self.database)
                if unsafe:
                    raise UnsafeRecordError(
                        f"unfinished durable runs {', '.join(unsafe[:5])} are recorded in a "
                        "form other than raf's JSON (a Python pickle can run code when "
                        "loaded), so none is recovered; finish them with the program that "
                        "wrote them, or cancel or delete them in the system database"
                    )
                DBOS(config=config)
                DBOS.launch()
                self.launched = True
            finally:
                await asyncio.to_thread(lock.release)
            for name in self.agents:
                await DBOS.register_queue_async(
                    queue_name(name),
                    global_concurrency=self._limit(name),
                    partition_concurrency=1,
                    polling_interval_sec=self.queue_polling,
                    on_conflict="always_update",
                )
            for name in self.workflows:
                await DBOS.register_queue_async(
                    workflow_queue_name(name),
                    global_concurrency=self._limit(name),
                    polling_interval_sec=self.queue_polling,
                    on_conflict="always_update",
                )
            await asyncio.to_thread(self.heartbeat.start)
        except BaseException:
            self.shutdown()
            raise

    def shutdown(self) -> None:
        """Stop DBOS; unfinished runs stay recorded and resume on the next launch."""
        global _current
        self.heartbeat.stop()
        if self.launched:
            DBOS.destroy(destroy_registry=False)
        self.launched = False
        _current = None

    def _limit(self, agent_name: str) -> int | None:
        if isinstance(self.concurrency, Mapping):
            return self.concurrency.get(agent_name)
        return self.concurrency

    def agent(self, name: str) -> AgentLike:
        agent = self.agents.get(name)
        if agent is None:
            known = ", ".join(sorted(self.agents)) or "none"
            raise RafError(f"no agent named {name!r} runs durably here (known: {known})")
        return agent

    # -- runs -------------------------------------------------------------------------

    async def start(
        self,
        agent_name: str,
        messages: Sequence[ChatMessage] = (),
        *,
        session_id: str,
        approvals: Sequence[ApprovalResponseContent] = (),
        run_id: str | None = None,
        queued: bool = True,
        recorded: bool = False,
    ) -> str:
        """Start a run (queued on its agent's queue, behind the session's earlier runs,
        unless `queued` is false); its id. A `recorded` run's id is a run record's, and
        each of its turns is written there by the `turn_recorder`."""
        self.agent(agent_name)
        run_id = run_id or f"{session_id}.{uuid.uuid4().hex[:12]}"
        request = {
            "agent": agent_name,
            "session_id": session_id,
            "messages": [m.to_dict() for m in messages],
            "approvals": [content_to_dict(a) for a in approvals],
        }
        if recorded:
            request["record"] = run_id
        if queued:
            options: EnqueueOptions = {
                "workflow_name": WORKFLOW_NAME,
                "queue_name": queue_name(agent_name),
                "workflow_id": run_id,
                "queue_partition_key": session_id,
            }
            await DBOS.enqueue_workflow_with_options_async(options, request)
        else:
            with SetWorkflowID(run_id):
                await DBOS.start_workflow_async(agent_run_workflow, request)
        return run_id

    async def _turn(self, run_id: str, turn: int, max_wait: float | None) -> dict[str, Any]:
        """The event that turn `turn` of a run published; a DurableRunError when the run
        failed, was cancelled, or `max_wait` seconds passed."""
        loop = asyncio.get_running_loop()
        deadline = None if max_wait is None else loop.time() + max_wait
        while True:
            data = await DBOS.get_event_async(run_id, f"turn-{turn}", timeout_seconds=0.5)
            if data is not None:
                return dict(data)
            status = await DBOS.get_workflow_status_async(run_id)
            if status is None:
                raise DurableRunError(
                    f"no durable run {run_id!r}", error_type="NotFound", run_id=run_id
                )
            if status.status in ("ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"):
                raise DurableRunError(
                    f"durable run {run_id!r} ended {status.status.lower()}: {status.error}",
                    error_type=status.status,
                    run_id=run_id,
                )
            if deadline is not None and loop.time() > deadline:
                raise DurableRunError(
                    f"durable run {run_id!r} did not reach turn {turn} in {max_wait}s",
                    error_type="Timeout",
                    run_id=run_id,
                )

    async def outcome(
        self, run_id: str, turn: int = 0, max_wait: float | None = None
    ) -> TurnOutcome:
        """Wait for turn `turn` of an agent run to finish or pause for approvals."""
        return _outcome(run_id, turn, await self._turn(run_id, turn, max_wait))

    # -- schedules --------------------------------------------------------------------

    async def create_schedule(self, schedule: Schedule) -> None:
        """Keep `schedule` in the system database: every worker starts its ticks, and
        each tick runs once. A name kept already is a `RafError`."""
        check_cron(schedule.cron)
        self.agent(schedule.agent)
        if await DBOS.get_schedule_async(schedule.name) is not None:
            raise RafError(f"a schedule named {schedule.name!r} exists already")
        await DBOS.create_schedule_async(
            schedule_name=schedule.name,
            workflow_fn=scheduled_run_workflow,
            schedule=schedule.cron,
            context=schedule.context(),
        )

    async def schedules(self, prefix: str = SCHEDULE_PREFIX) -> list[Schedule]:
        """The schedules kept whose name starts with `prefix`."""
        stored = await DBOS.list_schedules_async(schedule_name_prefix=prefix)
        return [
            Schedule.from_stored(s["schedule_name"], s["schedule"], s["context"]) for s in stored
        ]

    async def delete_schedule(self, name: str) -> None:
        await DBOS.delete_schedule_async(name)

    async def replace_document_schedules(self, schedules: Sequence[Schedule]) -> None:
        """Make the documents' schedules those kept: each created or replaced, and those
        no document declares any more removed."""
        for schedule in schedules:
            check_cron(schedule.cron)
            self.agent(schedule.agent)
        wanted = {s.name for s in schedules}
        for kept in await self.schedules(DOCUMENT_PREFIX):
            if kept.name not in wanted:
                await self.delete_schedule(kept.name)
        if schedules:
            await DBOS.apply_schedules_async(
                [
                    {
                        "schedule_name": s.name,
                        "workflow_fn": scheduled_run_workflow,
                        "schedule": s.cron,
                        "context": s.context(),
                    }
                    for s in schedules
                ]
            )

    # -- workflows --------------------------------------------------------------------

    async def start_workflow(
        self, name: str, input: Any = None, *, run_id: str | None = None
    ) -> str:
        """Queue a run of the workflow `name` (its input as the workflow's JSON); its id."""
        build_workflow(self.workflows, name)  # an unknown name fails here, not in a worker
        run_id = run_id or f"{name}.{uuid.uuid4().hex[:12]}"
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW_RUN_NAME,
            "queue_name": workflow_queue_name(name),
            "workflow_id": run_id,
        }
        await DBOS.enqueue_workflow_with_options_async(
            options, {"workflow": name, "input": encode(input)}
        )
        return run_id

    async def workflow_outcome(
        self, run_id: str, turn: int = 0, max_wait: float | None = None
    ) -> WorkflowOutcome:
        """Wait for turn `turn` of a workflow run to complete or pause for input."""
        return outcome_of(run_id, turn, await self._turn(run_id, turn, max_wait))

    async def answer_workflow(
        self,
        paused: WorkflowOutcome,
        responses: Mapping[str, Any],
        *,
        max_wait: float | None = None,
    ) -> WorkflowOutcome:
        """Send answers (by request id) to a paused workflow run; the next turn's outcome.
        The answers are claimed in the workflow's checkpoint store first: when another
        caller (in any process) answered the same request, `AnswerClaimedError` is raised
        and nothing is sent."""
        answers = {k: encode(v) for k, v in responses.items()}
        claimant = f"{paused.run_id}:turn-{paused.turn + 1}:{uuid.uuid4().hex}"
        if paused.checkpoint_id is not None and paused.workflow:
            store = build_workflow(self.workflows, paused.workflow).checkpoint_store
            await store.claim(paused.checkpoint_id, sorted(answers), claimant)
        await DBOS.send_async(
            paused.run_id, answers_message(answers, claimant), topic=RESPONSES_TOPIC
        )
        return await self.workflow_outcome(paused.run_id, paused.turn + 1, max_wait)

    async def run(
        self,
        agent_name: str,
        messages: Sequence[ChatMessage] = (),
        *,
        session_id: str,
        approvals: Sequence[ApprovalResponseContent] = (),
        max_wait: float | None = None,
    ) -> TurnOutcome:
        """Start a run and wait until it finishes or pauses for approvals."""
        run_id = await self.start(agent_name, messages, session_id=session_id, approvals=approvals)
        return await self.outcome(run_id, 0, max_wait)

    async def cancel(self, run_id: str) -> None:
        """Cancel a run, in whichever worker runs it (its awaiting callers get an error)."""
        await DBOS.cancel_workflow_async(run_id)

    @staticmethod
    def waiting_run(session: AgentSession) -> str | None:
        """The id of the durable run that paused in this session for approvals, if any."""
        mark = session.metadata.get(DURABLE_KEY)
        if isinstance(mark, dict) and isinstance(mark.get("run_id"), str):
            return str(mark["run_id"])
        return None

    async def answer(
        self,
        session: AgentSession,
        approvals: Sequence[ApprovalResponseContent],
        *,
        agent_name: str | None = None,
        max_wait: float | None = None,
    ) -> TurnOutcome:
        """Answer the approvals a session waits for: the paused run receives them and
        goes on (in whichever worker holds it); when no run waits any more (it gave up
        waiting, or the pause came from a run that was not durable), a new run of
        `agent_name` (by default the agent of the paused run) starts with the answers."""
        mark = session.metadata.get(DURABLE_KEY)
        answers = [content_to_dict(a) for a in approvals]
        if isinstance(mark, dict) and isinstance(mark.get("run_id"), str):
            run_id, turn = mark["run_id"], int(mark.get("turn", 1))
            status = await DBOS.get_workflow_status_async(run_id)
            if status is not None and status.status in ("PENDING", "ENQUEUED"):
                await DBOS.send_async(run_id, answers, topic=APPROVALS_TOPIC)
                return await self.outcome(run_id, turn, max_wait)
        run_id = await self.start(
            agent_name or _agent_of(session), session_id=session.id, approvals=approvals
        )
        return await self.outcome(run_id, 0, max_wait)


def _wal(path: Path) -> None:
    """Put a SQLite system database in WAL mode (kept in the file): a step is then one
    append and one sync instead of a rollback journal's several, and readers (the run
    waiting for an event) do not block the writer."""
    import sqlite3

    private_file(path)  # runs, their inputs and results: readable by the owner only
    with contextlib.closing(sqlite3.connect(path)) as db:
        db.execute("PRAGMA journal_mode=WAL")


def _agent_of(session: AgentSession) -> str:
    mark = session.metadata.get(DURABLE_KEY)
    if isinstance(mark, dict) and isinstance(mark.get("agent"), str):
        return str(mark["agent"])
    raise RafError(f"session {session.id!r} has no durable run to answer")


def _outcome(run_id: str, turn: int, data: dict[str, Any]) -> TurnOutcome:
    error = data.get("error")
    if error is not None:
        raise DurableRunError(
            f"durable run {run_id!r} failed: {error['type']}: {error['message']}",
            error_type=str(error["type"]),
            run_id=run_id,
        )
    chat = response_from_json(data["response"])
    response = AgentResponse(
        messages=chat.messages,
        finish_reason=chat.finish_reason,
        usage=chat.usage,
        model_id=chat.model_id,
        response_id=chat.response_id,
        session_id=data.get("session_id"),
    )
    return TurnOutcome(run_id=run_id, turn=turn, response=response)


# -- the workflow and its store steps -------------------------------------------------


async def _load_session(session_id: str) -> AgentSession:
    runtime = current_runtime()

    async def load() -> dict[str, Any] | None:
        try:
            session = await runtime.store.load(session_id)
        except SessionNotFoundError:
            return None
        return {"text": session.stored_text, "revision": session.revision}

    data = await DBOS.run_step_async({"name": "session:load"}, load)
    if data is None:
        return AgentSession(id=session_id)
    import json

    session = AgentSession.from_dict(json.loads(data["text"]))
    session.mark_stored(data["revision"], data["text"])
    return session


async def _save_session(session: AgentSession) -> None:
    runtime = current_runtime()

    async def save() -> dict[str, Any]:
        await runtime.store.save(session)
        return {"text": session.stored_text, "revision": session.revision}

    data = await DBOS.run_step_async({"name": "session:save"}, save)
    session.mark_stored(data["revision"], data["text"])


async def _record_turn(request: dict[str, Any], turn: int, out: dict[str, Any]) -> None:
    """Write a recorded run's turn into its run record, as a step: done once, or again
    whole after a crash inside it (the recorder writes the same events at the same
    numbers)."""
    if "record" not in request:
        return
    recorder = current_runtime().turn_recorder
    if recorder is None:
        raise RafError(
            "a run with a run record resumed in a worker that keeps no run records: "
            "serve every worker of this system database with the same server"
        )
    await DBOS.run_step_async({"name": f"run:record-{turn}"}, recorder, request, turn, out)


@DBOS.workflow(name=WORKFLOW_NAME)
async def agent_run_workflow(request: dict[str, Any]) -> dict[str, Any]:
    """One durable run: load the session, run turns (pausing durably for approvals),
    save the session; every model and tool call inside is a step."""
    runtime = current_runtime()
    run_id = DBOS.workflow_id
    assert run_id is not None
    agent_name = str(request["agent"])
    agent = runtime.agent(agent_name)
    session = await _load_session(str(request["session_id"]))
    messages = [ChatMessage.from_dict(m) for m in request.get("messages", [])]
    approvals = [content_from_dict(a) for a in request.get("approvals", [])]
    turn = 0
    while True:
        options = AgentRunOptions(
            middleware=DURABLE_MIDDLEWARE,
            tool_approval_responses=[
                a for a in approvals if isinstance(a, ApprovalResponseContent)
            ],
        )
        try:
            response = await agent.run(messages, session=session, options=options)
        except Exception as exc:  # recorded as data: an exception may not survive pickling
            out: dict[str, Any] = {"error": {"type": type(exc).__name__, "message": str(exc)}}
            await DBOS.set_event_async(f"turn-{turn}", out)
            await _record_turn(request, turn, out)
            return out
        paused = bool(response.pending_approvals)
        if paused:
            session.metadata[DURABLE_KEY] = {
                "run_id": run_id,
                "turn": turn + 1,
                "agent": agent_name,
            }
        else:
            session.metadata.pop(DURABLE_KEY, None)
        await _save_session(session)
        out = {"response": response_to_json(response), "session_id": session.id}
        await DBOS.set_event_async(f"turn-{turn}", out)
        await _record_turn(request, turn, out)
        if not paused:
            return out
        answers = await DBOS.recv_async(APPROVALS_TOPIC, timeout_seconds=runtime.approval_wait)
        if answers is None:  # nobody answered in time: the approvals stay pending
            return out
        approvals = [content_from_dict(a) for a in answers]
        messages = []
        turn += 1


@DBOS.workflow(name=SCHEDULED_WORKFLOW)
async def scheduled_run_workflow(when: datetime, context: dict[str, Any]) -> None:
    """One tick: open its run (session and run record) and queue it on its agent's
    queue, behind its session's earlier runs."""
    runtime = current_runtime()
    tick = DBOS.workflow_id
    assert tick is not None
    run_id = tick_run_id(tick)
    agent = str(context["agent"])
    runtime.agent(agent)
    opener = runtime.run_opener
    opened = {**context, "tick": when.isoformat()}
    if opener is not None:
        session_id = await DBOS.run_step_async({"name": "schedule:open"}, opener, opened, run_id)
    else:
        session_id = str(context.get("session") or run_id)
    request: dict[str, Any] = {
        "agent": agent,
        "session_id": session_id,
        "messages": [ChatMessage.user(str(context["input"])).to_dict()],
        "approvals": [],
    }
    if opener is not None:
        request["record"] = run_id
    options: EnqueueOptions = {
        "workflow_name": WORKFLOW_NAME,
        "queue_name": queue_name(agent),
        "workflow_id": run_id,
        "queue_partition_key": session_id,
    }
    await DBOS.enqueue_workflow_with_options_async(options, request)


def default_executor_id() -> str:
    """An executor id unique to this process (for one worker among several)."""
    return f"{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex[:6]}"


@DBOS.workflow(name=WORKFLOW_RUN_NAME)
async def workflow_run_workflow(request: dict[str, Any]) -> dict[str, Any]:
    """One durable workflow run: each turn (to completion or a pause) is a step; a pause
    waits for its answers on a DBOS message."""
    runtime = current_runtime()
    run_id = DBOS.workflow_id
    assert run_id is not None
    name = str(request["workflow"])
    checkpoint: str | None = None
    responses: dict[str, Any] | None = None
    claimant: str | None = None
    turn = 0
    while True:

        async def turn_step(
            start: str | None = checkpoint,
            answers: dict[str, Any] | None = responses,
            by: str | None = claimant,
        ) -> dict[str, Any]:
            try:
                return await advance(
                    runtime.workflows,
                    name,
                    run_id,
                    input=request.get("input"),
                    from_checkpoint=start,
                    responses=answers,
                    claimant=by,
                )
            except Exception as exc:  # kept as data: an exception may not survive pickling
                return {"error": {"type": type(exc).__name__, "message": str(exc)}}

        out = await DBOS.run_step_async({"name": f"workflow:{name}"}, turn_step)
        await DBOS.set_event_async(f"turn-{turn}", out)
        if out.get("status") != "paused":
            return out
        message = await DBOS.recv_async(RESPONSES_TOPIC, timeout_seconds=runtime.approval_wait)
        if message is None:
            return out
        turn += 1
        checkpoint = out["checkpoint_id"]
        responses, claimant = read_answers(message, f"{run_id}:turn-{turn}")
