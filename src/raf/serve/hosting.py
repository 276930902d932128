"""The agents a server hosts, their sessions per caller, and the runs in progress.

Every protocol (native HTTP, OpenAI-compatible, A2A, AG-UI, ACP) goes through one
`AgentHost`, so ownership, one-run-per-session and cancellation hold the same way
everywhere — and across every process serving from the same store: a run holds its
session's lease in the store (`SessionLeases`) from before the session is loaded until
its turn is saved, and claims approved calls in the store before they run.
"""

from __future__ import annotations

import re
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
from raf.stores.sessions import InMemorySessionStore
from raf.stores.timed import DEFAULT_STORE_TIMEOUT, TimedSessionStore

SERVE_KEY = "raf_serve"
"""Session metadata key under which the server records the agent and the owner."""

SESSION_ID = re.compile(r"^[A-Za-z0-9_-][A-Za-z0-9_.-]{0,127}$")
"""Session ids a client may choose: safe as a file name in every store."""

T = TypeVar("T")

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
        active = await self._start(agent_name, session.id, session_id, owner)
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
        active = await self._start(agent_name, self._key(session_id, owner), session_id, owner)
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

    async def _start(self, agent_name: str, key: str, session_id: str, owner: str) -> ActiveRun:
        """A run of the session stored as `key`, holding its lease; a 409 when another run
        (of this process or another) holds it."""
        active = ActiveRun(
            run_id=uuid.uuid4().hex, agent=agent_name, owner=owner, key=key, session_id=session_id
        )
        local = self.runs.get(key)
        if local is not None:
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
            standing = await lease.take()
        except SessionError as exc:
            raise store_failure(exc) from None
        if standing.holder != lease.holder:
            raise session_busy(session_id, run_of(standing.holder))
        active.lease = lease
        self.runs[key] = active
        return active

    async def _prepare(
        self,
        agent_name: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage],
        approvals: Sequence[ApprovalResponseContent],
        *,
        expect_messages: int | None = None,
    ) -> tuple[AgentLike, AgentSession, ActiveRun]:
        """The agent, the session (loaded once its lease is held, so it is the latest
        any process saved; a new one when `session_id` is None, stored when the run ends)
        and the run, with the request checked against the session. `expect_messages`:
        the run goes on only if the stored session still holds that many messages (a
        client continuing from a turn it saw), checked under the lease, so of two
        requests continuing one turn only the first runs (409 `session_moved`)."""
        agent = self.agent(agent_name)
        if session_id is None:
            session_id = uuid.uuid4().hex
            key = Tenant(owner).key(session_id)
            active = await self._start(agent_name, key, session_id, owner)
            session = agent.create_session(key)
            session.metadata[SERVE_KEY] = {"agent": agent_name, "owner": owner, "id": session_id}
            try:
                check_request(session, messages, approvals)
            except BaseException:
                await self.release(active)
                raise
            return agent, session, active
        active = await self._start(agent_name, self._key(session_id, owner), session_id, owner)
        try:
            session = await self.session(agent_name, session_id, owner)
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

    async def run(
        self,
        agent_name: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage] = (),
        approvals: Sequence[ApprovalResponseContent] = (),
    ) -> tuple[AgentResponse, ActiveRun]:
        """One run to the end, in the caller's session `session_id` or a new one (None;
        its id is `ActiveRun.session_id`); the session is stored only when the run
        finished."""
        agent, session, active = await self._prepare(
            agent_name, session_id, owner, messages, approvals
        )
        try:
            loaded = session.revision
            response = await agent.run(
                list(messages), session=session, options=self._options(active, approvals)
            )
            await self._record(session, loaded)
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
    ) -> tuple[ActiveRun, AsyncIterator[AgentResponseUpdate]]:
        """Start a streamed run (in a new session when `session_id` is None): checks
        happen now (so errors are plain HTTP errors), the updates come from the returned
        iterator; the session is stored before the last. `instructions` are added to the
        agent's for this run only, as are `output_type` and `chat_options` (see
        `AgentRunOptions`); `expect_messages` as for `_prepare`."""
        agent, session, active = await self._prepare(
            agent_name, session_id, owner, messages, approvals, expect_messages=expect_messages
        )
        options = self._options(active, approvals)
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
                await self._record(session, loaded)
                if final is not None:
                    yield final
            finally:
                await self.release(active)

        return active, updates()

    async def _record(self, session: AgentSession, loaded: str | None) -> None:
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

    def _options(
        self, active: ActiveRun, approvals: Sequence[ApprovalResponseContent]
    ) -> AgentRunOptions:
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
