"""The agents a server hosts, their sessions per caller, and the runs in progress.

Every protocol (native HTTP, OpenAI-compatible, A2A, AG-UI, ACP) goes through one
`AgentHost`, so ownership, one-run-per-session and cancellation hold the same way
everywhere — and across every process serving from the same store: a run holds its
session's lease in the store (`SessionLeases`) from before the session is loaded until
its turn is saved, and claims approved calls in the store before they run.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from raf.core.agent_like import AgentLike
from raf.core.call_approval import session_approvals
from raf.core.cancellation import CancellationToken
from raf.core.contents import ApprovalResponseContent
from raf.core.errors import (
    ApprovalError,
    ConfigurationError,
    SessionConflictError,
    SessionError,
    SessionNotFoundError,
)
from raf.core.messages import ChatMessage
from raf.core.options import AgentRunOptions, ChatOptions
from raf.core.responses import AgentResponse, AgentResponseUpdate, UpdateKind
from raf.core.sessions import AgentSession, SessionStore
from raf.serve.double_texting import (
    IF_BUSY,
    INTERRUPT,
    QUEUE_POLL_SECONDS,
    REJECT,
    ROLLBACK,
    Rollback,
)
from raf.serve.errors import ServeError, not_found
from raf.serve.requests import store_failure
from raf.serve.tenancy import ANONYMOUS, Tenant, owner_of
from raf.stores.leases import (
    DEFAULT_LEASE_SECONDS,
    HeldLease,
    UnreleasedLeases,
    holder_id,
    leases_of,
    run_of,
)
from raf.stores.runs import CANCELLED, DONE, QUEUED, RUNNING, RunRecord, runs_of
from raf.stores.sessions import InMemorySessionStore
from raf.stores.timed import DEFAULT_STORE_TIMEOUT, TimedSessionStore

SERVE_KEY = "raf_serve"
"""Session metadata key under which the server records the agent and the owner."""

SESSION_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")
"""Session ids a client may choose: safe as a file name in every store."""

T = TypeVar("T")

log = logging.getLogger("raf.serve")

__all__ = ["ANONYMOUS", "SERVE_KEY", "ActiveRun", "AgentHost", "owner_of", "public_id"]


def public_id(session: AgentSession) -> str:
    """The id a session's owner knows it by (its stored id is scoped to the owner)."""
    mark = session.metadata.get(SERVE_KEY)
    if isinstance(mark, dict) and isinstance(mark.get("id"), str):
        return str(mark["id"])
    return session.id


@dataclass(kw_only=True, slots=True)
class ActiveRun:
    """A run in progress in one session, cancellable from another request."""

    run_id: str
    agent: str
    owner: str
    key: str = ""
    """The stored id of the session it runs in (scoped to the owner)."""
    session_id: str = ""
    """The session's id as its owner knows it."""
    token: CancellationToken = field(default_factory=CancellationToken)
    lease: HeldLease | None = None
    """The session's lease this run holds (given back when it ends)."""
    record: RunRecord | None = None
    """Its run record, when it has one (a native run's, or one made to queue it)."""
    own_record: bool = False
    """The host made `record` to queue the run, and ends it when the run ends."""
    rollback: Rollback | None = None
    """What to remove from the session before this run goes on (`rollback`)."""


def session_busy(session_id: str, run_id: str) -> ServeError:
    """The 409 for a session another run holds, in this process or another."""
    return ServeError(
        409,
        "session_busy",
        f"session {session_id!r} has a run in progress ({run_id}); wait for it or cancel it",
        run_id=run_id,
    )


class AgentHost:
    """Named agents, one session store, and at most one run in progress per session (in
    every process sharing the store). Every call of a store kept outside this process
    answers within `store_timeout` seconds or fails the request with a 503
    `session_store_error`; a lease a run could not give back because the store failed
    is given back once the store answers again (`UnreleasedLeases`)."""

    def __init__(
        self,
        agents: Mapping[str, AgentLike] | Sequence[AgentLike],
        *,
        store: SessionStore | None = None,
        middleware: Sequence[Any] = (),
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        store_timeout: float = DEFAULT_STORE_TIMEOUT,
        if_busy: str = REJECT,
    ) -> None:
        if isinstance(agents, Mapping):
            self.agents: dict[str, AgentLike] = dict(agents)
        else:
            self.agents = {}
            for agent in agents:
                if agent.name in self.agents:
                    raise ValueError(f"two agents are named {agent.name!r}; names must differ")
                self.agents[agent.name] = agent
        if isinstance(lease_seconds, bool) or not lease_seconds > 0:
            raise ConfigurationError(
                f"lease_seconds must be a number of seconds above 0, not {lease_seconds!r}"
            )
        if isinstance(store_timeout, bool) or not store_timeout > 0:
            raise ConfigurationError(
                f"store_timeout must be a number of seconds above 0, not {store_timeout!r}"
            )
        if store is None:
            store = InMemorySessionStore()
        self.store: SessionStore = (
            store
            if isinstance(store, InMemorySessionStore)  # in this process: it cannot hang
            else TimedSessionStore(store, store_timeout)
        )
        """The session store, each call bounded by `store_timeout` (`TimedSessionStore`)
        unless it is kept in this process's memory."""
        self.store_timeout = float(store_timeout)
        self.leases = leases_of(self.store)
        self.run_records = runs_of(self.store)
        """Where runs are recorded and each session's queue is kept: the store itself."""
        if if_busy not in IF_BUSY:
            raise ConfigurationError(
                f"if_busy must be one of {', '.join(IF_BUSY)}, not {if_busy!r}"
            )
        self.if_busy = if_busy
        """What a run does when its session is busy, unless its request says (`reject`,
        `enqueue`, `interrupt`, `rollback`)."""
        """Where runs take their sessions' leases: the store itself (see `leases_of`)."""
        self.unreleased = UnreleasedLeases(self.leases)
        """Leases runs of this process could not give back: given back once the store
        answers, so the sessions are not busy until the leases lapse."""
        self.lease_seconds = float(lease_seconds)
        """How long a run's lease lasts unrenewed: a worker that dies holding a session
        frees it this long after its last renewal."""
        self.runs: dict[str, ActiveRun] = {}
        """The runs of this process in progress, by session key."""
        self.middleware: list[Any] = list(middleware)
        """Middleware added to every run the host starts (the UI's recorder, for one)."""

    # -- agents -----------------------------------------------------------------------

    def agent(self, name: str) -> AgentLike:
        """The agent called `name`; a 404 when there is none."""
        agent = self.agents.get(name)
        if agent is None:
            raise not_found("agent", name)
        return agent

    # -- sessions ---------------------------------------------------------------------

    async def create_session(
        self, agent_name: str, owner: str, session_id: str | None = None
    ) -> AgentSession:
        """A new, stored session of `agent_name` owned by `owner`. A chosen id is the
        caller's own: another owner's session of that name is a different one, so a
        409 `session_exists` only ever means "you made it already" (in any process:
        the store refuses to create a session twice)."""
        agent = self.agent(agent_name)
        tenant = Tenant(owner)
        if session_id is None:
            session_id = uuid.uuid4().hex
            key = tenant.key(session_id)
        else:
            key = tenant.check_name(session_id, SESSION_ID, "session")
        try:
            session = agent.create_session(key)
            session.metadata[SERVE_KEY] = {"agent": agent_name, "owner": owner, "id": session_id}
            await self.store.save(session)
        except SessionConflictError:
            raise ServeError(
                409, "session_exists", f"a session named {session_id!r} exists already"
            ) from None
        except SessionError as exc:  # the id was checked: the store failed
            raise store_failure(exc) from None
        return session

    def _key(self, session_id: str, owner: str) -> str:
        """The stored key of the caller's session `session_id`; a 404 for an id no
        session can have."""
        tenant = Tenant(owner)
        if not SESSION_ID.match(session_id) or len(session_id) > tenant.longest_name():
            raise not_found("session", session_id)
        return tenant.key(session_id)

    async def session(self, agent_name: str, session_id: str, owner: str) -> AgentSession:
        """The caller's stored session of this agent named `session_id`; a 404 otherwise,
        the same as for a session that does not exist, so ids of others cannot be probed."""
        self.agent(agent_name)
        key = self._key(session_id, owner)
        try:
            session = await self.store.load(key)
        except SessionNotFoundError:
            raise not_found("session", session_id) from None
        except SessionError as exc:  # the id was checked: the store failed
            raise store_failure(exc) from None
        mark = session.metadata.get(SERVE_KEY)
        if not isinstance(mark, dict) or mark.get("agent") != agent_name:
            raise not_found("session", session_id)
        Tenant(owner).check(mark.get("owner"), "session", session_id)
        return session

    async def delete_session(self, agent_name: str, session_id: str, owner: str) -> None:
        """Remove a session; refused while a run (of any process) is in progress in it."""
        session = await self.session(agent_name, session_id, owner)
        active = await self._start(agent_name, session.id, session_id, owner, if_busy=REJECT)
        try:
            await self.store.delete(session.id)
        finally:
            await self.release(active)

    async def edit_session(
        self, agent_name: str, session_id: str, owner: str, edit: Callable[[AgentSession], T]
    ) -> tuple[AgentSession, T]:
        """Change the caller's stored session outside a run and store it, holding its lease
        as a run does (a 409 while a run of any process is in progress in it), so every
        process sees the change and no run's turn is lost to it; the session and what
        `edit` returned. Nothing is stored when `edit` raises."""
        active = await self._start(
            agent_name, self._key(session_id, owner), session_id, owner, if_busy=REJECT
        )
        try:
            session = await self.session(agent_name, session_id, owner)
            result = edit(session)
            await self.store.save(session)
        finally:
            await self.release(active)
        return session, result

    async def run_in_progress(self, session_key: str) -> str | None:
        """The id of the run in progress in the session stored as `session_key`, in this
        process or any other sharing the store; None when there is none."""
        active = self.runs.get(session_key)
        if active is not None:
            return active.run_id
        lease = await self.leases.read_lease(session_key)
        return None if lease is None else run_of(lease.holder)

    async def check_store(self) -> None:
        """Return once the session store answers (within `store_timeout`); its
        `SessionStoreError` otherwise. What `/ready` asks."""
        if isinstance(self.store, TimedSessionStore):
            await self.store.probe()

    # -- runs -------------------------------------------------------------------------

    async def release(self, active: ActiveRun) -> None:
        """End a run: forget it and give its session's lease back. Safe to call twice (a
        stream never iterated, because its client left at once, is released by the
        response's background task)."""
        if self.runs.get(active.key) is active:
            del self.runs[active.key]
        if active.lease is not None:
            await active.lease.release()
        own, active.own_record = active.own_record, False
        record = active.record
        if own and record is not None and record.ended_at is None:
            record.state = CANCELLED if active.token.cancelled else DONE
            record.ended_at = record.updated_at = time.time()
            try:
                await self.run_records.save_run(record)
            except SessionError as exc:  # its state only: the queue passes a run ended
                log.warning("could not record the end of run %s: %s", record.id, exc)

    async def _start(
        self,
        agent_name: str,
        key: str,
        session_id: str,
        owner: str,
        *,
        if_busy: str | None = None,
        record: RunRecord | None = None,
        on_queued: Callable[[RunRecord], Any] | None = None,
    ) -> ActiveRun:
        """A run of the session stored as `key`, holding its lease. When another run (of
        this process or another) holds it: a 409 for `reject`; otherwise the run waits its
        turn in the session's queue (kept in the store, first come first served over every
        process), after stopping the run in progress for `interrupt` and `rollback`.
        `record` is the run's record when the caller keeps one (its id is the run's);
        `on_queued` is called once the run waits in the queue."""
        strategy = self.if_busy if if_busy is None else if_busy
        active = ActiveRun(
            run_id=record.id if record is not None else uuid.uuid4().hex,
            agent=agent_name,
            owner=owner,
            key=key,
            session_id=session_id,
            record=record,
        )
        local = self.runs.get(key)
        if local is not None and strategy == REJECT:
            raise session_busy(session_id, local.run_id)
        lease = HeldLease(
            self.leases,
            key,
            holder_id(active.run_id),
            self.lease_seconds,
            active.token,
            self.unreleased,
        )
        try:
            standing = None if local is not None else await lease.take()
            if standing is None or standing.holder != lease.holder:
                if strategy == REJECT:
                    assert standing is not None
                    raise session_busy(session_id, run_of(standing.holder))
                await self._wait_turn(active, lease, strategy, on_queued)
        except SessionError as exc:
            await self._give_up(active)
            raise store_failure(exc) from None
        except BaseException:
            await self._give_up(active)
            raise
        active.lease = lease
        self.runs[key] = active
        record = active.record
        if record is not None:
            record.state = RUNNING
            record.holder = lease.holder
            record.started_at = time.time()
            try:
                if record.seq == 0:  # it found the session free: recorded once, running
                    record.seq = (await self.run_records.add_run(record)).seq
                else:
                    await self._save_record(record)
            except BaseException:
                await self.release(active)
                raise
        return active

    async def _give_up(self, active: ActiveRun) -> None:
        """A run that never started (refused, cancelled while queued, or the store
        failed): its record, when the host made one, ends cancelled."""
        record = active.record
        if active.own_record and record is not None and record.seq:
            record.state = CANCELLED
            record.ended_at = time.time()
            try:
                await self._save_record(record)
            except SessionError as exc:
                log.warning("could not record the end of run %s: %s", record.id, exc)

    async def _save_record(self, record: RunRecord) -> None:
        record.updated_at = time.time()
        await self.run_records.save_run(record)

    async def _wait_turn(
        self,
        active: ActiveRun,
        lease: HeldLease,
        strategy: str,
        on_queued: Callable[[RunRecord], Any] | None,
    ) -> None:
        """Wait in the session's queue until no live queued run came before this one and
        the session's lease is free, then take it. The queue is the session's runs in the
        store in arrival order; a queued run whose process stopped promising to be there
        (`alive_until`) is passed over."""
        record = active.record
        if record is None:
            record = RunRecord(
                id=active.run_id,
                session=active.key,
                agent=active.agent,
                owner=active.owner,
                session_name=active.session_id,
                if_busy=strategy,
            )
            active.own_record = True
        record.state = QUEUED
        record.holder = lease.holder
        record.alive_until = time.time() + self.lease_seconds
        if record.seq == 0:
            record.seq = (await self.run_records.add_run(record)).seq
        else:
            await self._save_record(record)
        active.record = record
        if strategy in (INTERRUPT, ROLLBACK):
            await self._stop_current(active, record, strategy)
        if on_queued is not None:
            await on_queued(record)
        promised = time.monotonic()
        while True:
            queue = await self.run_records.session_runs(active.key, active=True)
            mine = next((r for r in queue if r.id == record.id), None)
            if mine is None or mine.cancel is not None:
                reason = "it ended" if mine is None else mine.cancel
                raise ServeError(
                    409,
                    "run_cancelled",
                    f"run {record.id} was cancelled while it waited its turn ({reason}); "
                    "the session is unchanged by it",
                    run_id=record.id,
                )
            now = time.time()
            ahead = [
                r for r in queue if r.seq < record.seq and r.state == QUEUED and r.alive_until > now
            ]
            if not ahead and self.runs.get(active.key) is None:
                standing = await lease.take()
                if standing.holder == lease.holder:
                    return
            if time.monotonic() - promised > self.lease_seconds / 3:
                record.alive_until = time.time() + self.lease_seconds
                await self._save_record(record)
                promised = time.monotonic()
            await asyncio.sleep(QUEUE_POLL_SECONDS)

    async def _stop_current(self, active: ActiveRun, record: RunRecord, strategy: str) -> None:
        """Ask the run in progress in the session to stop (`interrupt`, `rollback`): at
        once in this process, else through its lease, read by the process holding it when
        it next renews it. For `rollback`, note what the session held before that run's
        turn, and cancel the runs queued before this one (their turns never start)."""
        reason = (
            f"interrupted by run {active.run_id}"
            if strategy == INTERRUPT
            else f"rolled back by run {active.run_id}"
        )
        if strategy == ROLLBACK:
            try:
                stored = await self.store.load(active.key)
                active.rollback = Rollback(messages=len(stored.messages), revision=stored.revision)
            except SessionNotFoundError:
                active.rollback = Rollback(messages=0, revision=None)
            for queued in await self.run_records.session_runs(active.key, active=True):
                if queued.seq < record.seq and queued.state == QUEUED:
                    await self.run_records.cancel_run(queued.id, reason)
        local = self.runs.get(active.key)
        if local is not None:
            local.token.cancel(reason)
            target: str | None = local.run_id
        else:
            lease = await self.leases.cancel_lease(active.key, reason)
            target = None if lease is None else run_of(lease.holder)
        if target is not None:
            await self.run_records.cancel_run(target, reason)

    async def _prepare(
        self,
        agent_name: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage],
        approvals: Sequence[ApprovalResponseContent],
        *,
        expect_messages: int | None = None,
        if_busy: str | None = None,
        record: RunRecord | None = None,
        on_queued: Callable[[RunRecord], Any] | None = None,
        session_name: str | None = None,
    ) -> tuple[AgentLike, AgentSession, ActiveRun]:
        """The agent, the session (loaded once its lease is held, so it is the latest
        any process saved; a new one when `session_id` is None, stored when the run ends)
        and the run, with the request checked against the session. `expect_messages`:
        the run goes on only if the stored session still holds that many messages (a
        client continuing from a turn it saw), checked under the lease, so of two
        requests continuing one turn only the first runs (409 `session_moved`). `if_busy`,
        `record` and `on_queued` as for `_start`; `session_name`: the id a new session
        gets (a random one when None)."""
        agent = self.agent(agent_name)
        queueing: dict[str, Any] = {"if_busy": if_busy, "record": record, "on_queued": on_queued}
        if session_id is None:
            session_id = session_name or uuid.uuid4().hex
            key = Tenant(owner).key(session_id)
            active = await self._start(agent_name, key, session_id, owner, **queueing)
            session = agent.create_session(key)
            session.metadata[SERVE_KEY] = {"agent": agent_name, "owner": owner, "id": session_id}
            try:
                check_request(session, messages, approvals)
            except BaseException:
                await self.release(active)
                raise
            return agent, session, active
        active = await self._start(
            agent_name, self._key(session_id, owner), session_id, owner, **queueing
        )
        try:
            session = await self.session(agent_name, session_id, owner)
            rollback = active.rollback
            if rollback is not None and session.revision != rollback.revision:
                del session.messages[rollback.messages :]  # the stopped run's turn
            if expect_messages is not None and len(session.messages) != expect_messages:
                raise ServeError(
                    409,
                    "session_moved",
                    f"session {session_id!r} went on after the turn this request continues "
                    f"(it holds {len(session.messages)} messages, not {expect_messages}); "
                    "continue from its latest turn",
                )
            check_request(session, messages, approvals)
        except BaseException:
            await self.release(active)
            raise
        return agent, session, active

    async def begin(
        self,
        agent_name: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage] = (),
        approvals: Sequence[ApprovalResponseContent] = (),
        *,
        if_busy: str | None = None,
        session_name: str | None = None,
    ) -> tuple[AgentLike, AgentSession, ActiveRun]:
        """A turn its caller runs itself, perhaps as several runs under one lease (the MCP
        server asks approvals between them): the agent, the session and the run, as
        `run` starts them. The caller runs the agent with `run_options`, stores each run
        with `record_turn`, and ends with `release` whatever happens."""
        return await self._prepare(
            agent_name,
            session_id,
            owner,
            messages,
            approvals,
            if_busy=if_busy,
            session_name=session_name,
        )

    async def run(
        self,
        agent_name: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage] = (),
        approvals: Sequence[ApprovalResponseContent] = (),
        *,
        if_busy: str | None = None,
        record: RunRecord | None = None,
        on_queued: Callable[[RunRecord], Any] | None = None,
        session_name: str | None = None,
    ) -> tuple[AgentResponse, ActiveRun]:
        """One run to the end, in the caller's session `session_id` or a new one (None;
        its id is `ActiveRun.session_id`); the session is stored only when the run
        finished. `if_busy`, `record`, `on_queued` and `session_name` as for
        `_prepare`."""
        agent, session, active = await self._prepare(
            agent_name,
            session_id,
            owner,
            messages,
            approvals,
            if_busy=if_busy,
            record=record,
            on_queued=on_queued,
            session_name=session_name,
        )
        try:
            loaded = session.revision
            response = await agent.run(
                list(messages), session=session, options=self.run_options(active, approvals)
            )
            await self.record_turn(session, loaded)
        finally:
            await self.release(active)
        return response, active

    async def stream(
        self,
        agent_name: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage] = (),
        approvals: Sequence[ApprovalResponseContent] = (),
        *,
        instructions: str | None = None,
        output_type: Any = None,
        chat_options: ChatOptions | None = None,
        expect_messages: int | None = None,
        if_busy: str | None = None,
        record: RunRecord | None = None,
        on_queued: Callable[[RunRecord], Any] | None = None,
        session_name: str | None = None,
    ) -> tuple[ActiveRun, AsyncIterator[AgentResponseUpdate]]:
        """Start a streamed run (in a new session when `session_id` is None): checks
        happen now (so errors are plain HTTP errors), the updates come from the returned
        iterator; the session is stored before the last. `instructions` are added to the
        agent's for this run only, as are `output_type` and `chat_options` (see
        `AgentRunOptions`); `expect_messages`, `if_busy`, `record`, `on_queued` and
        `session_name` as for `_prepare`."""
        agent, session, active = await self._prepare(
            agent_name,
            session_id,
            owner,
            messages,
            approvals,
            expect_messages=expect_messages,
            if_busy=if_busy,
            record=record,
            on_queued=on_queued,
            session_name=session_name,
        )
        options = self.run_options(active, approvals)
        options.additional_instructions = instructions
        options.output_type = output_type
        options.chat_options = chat_options

        async def updates() -> AsyncIterator[AgentResponseUpdate]:
            try:
                loaded = session.revision
                final: AgentResponseUpdate | None = None
                async for update in agent.run_stream(list(messages), session, options):
                    if update.kind is UpdateKind.FINISHED:
                        final = update
                        continue
                    yield update
                await self.record_turn(session, loaded)
                if final is not None:
                    yield final
            finally:
                await self.release(active)

        return active, updates()

    async def record_turn(self, session: AgentSession, loaded: str | None) -> None:
        """Store the turn, unless the run stored it itself (an `Agent` records its turn
        in `AgentRunOptions.session_store`, the host's store)."""
        if session.revision == loaded:
            await self.store.save(session)

    def active_run(self, agent_name: str, session_id: str, owner: str) -> ActiveRun | None:
        """The caller's run of this process in progress in its session `session_id` of
        this agent, if any."""
        self.agent(agent_name)
        tenant = Tenant(owner)
        active = self.runs.get(tenant.key(session_id))
        if active is None or active.agent != agent_name or not tenant.owns(active.owner):
            return None
        return active

    async def cancel(
        self, agent_name: str, session_id: str, owner: str, reason: str = "cancelled by the client"
    ) -> str:
        """Cancel the caller's run in progress in the session, in this process at once or
        in the process holding its lease when that one next renews it; the run's id. A
        409 when none is running."""
        active = self.active_run(agent_name, session_id, owner)
        if active is not None:
            active.token.cancel(reason)
            return active.run_id
        lease = await self.leases.cancel_lease(self._key(session_id, owner), reason)
        if lease is None:
            raise ServeError(
                409,
                "no_run_in_progress",
                f"session {session_id!r} has no run in progress to cancel (it finished or "
                "was cancelled already); the session is unchanged",
            )
        return run_of(lease.holder)

    def run_options(
        self, active: ActiveRun, approvals: Sequence[ApprovalResponseContent]
    ) -> AgentRunOptions:
        """The options of a run the host started: its approval answers, the run's
        cancellation (a lost lease stops it), the host's middleware, and the store the
        run records its turn and claims its approvals in."""
        return AgentRunOptions(
            tool_approval_responses=list(approvals),
            cancellation=active.token,
            middleware=list(self.middleware),
            session_store=self.store,
        )


def check_request(
    session: AgentSession,
    messages: Sequence[ChatMessage],
    approvals: Sequence[ApprovalResponseContent],
) -> None:
    """Refuse a request the run would refuse, before anything runs, with a clear 409.
    Answers go to approvals the session waits on (a claimed one is refused by the run);
    a new message waits while any approval is still a human's to answer."""
    pending = {a.call_id: a for a in session_approvals(session)}
    if approvals:
        if messages:
            raise ServeError(
                400,
                "invalid_request",
                "send approval answers on their own, without new messages",
            )
        seen: set[str] = set()
        for answer in approvals:
            if answer.call_id in seen:
                raise ServeError(
                    400,
                    "duplicate_approval",
                    f"call {answer.call_id!r} is answered twice in one request",
                    call_id=answer.call_id,
                )
            seen.add(answer.call_id)
        for answer in approvals:
            if answer.call_id not in pending:
                raise ServeError(
                    409,
                    "approval_not_pending",
                    f"call {answer.call_id!r} is not waiting for approval in session "
                    f"{public_id(session)!r} (already answered, cancelled, or never asked); "
                    "the session is unchanged",
                    call_id=answer.call_id,
                    pending=sorted(pending),
                )
        return
    if any(a.answerable for a in pending.values()):
        raise ServeError(
            409,
            "awaiting_approval",
            f"session {public_id(session)!r} waits for approval of "
            + ", ".join(f"{p.name} ({p.call_id})" for p in pending.values())
            + "; answer them first",
            pending=sorted(pending),
        )
    if not messages:
        raise ServeError(400, "invalid_request", "a run needs at least one message")


def approval_error(exc: ApprovalError) -> ServeError:
    """An approval the agent itself refused, as a 409."""
    return ServeError(409, "approval_refused", str(exc))
