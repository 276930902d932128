"""`DurableAgentHost`: the same HTTP surface, with every run a durable workflow (queued
per agent, spread over the workers on one system database, paused durably on approvals)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any

from raf.core.agent_like import AgentLike
from raf.core.contents import ApprovalResponseContent
from raf.core.messages import ChatMessage, new_id
from raf.core.options import ChatOptions
from raf.core.responses import (
    AgentResponse,
    AgentResponseUpdate,
    UpdateKind,
    message_to_updates,
)
from raf.core.sessions import AgentSession
from raf.durable import DurableRunError, DurableRuntime
from raf.serve.errors import ServeError
from raf.serve.hosting import ActiveRun, AgentHost, public_id
from raf.stores.leases import DEFAULT_LEASE_SECONDS
from raf.stores.timed import DEFAULT_STORE_TIMEOUT


class DurableAgentHost(AgentHost):
    """An `AgentHost` whose runs go through a launched `DurableRuntime`. A streamed run
    sends the run's messages whole once it finishes or pauses: its steps are recorded
    in whichever worker runs it, not streamed from there."""

    def __init__(
        self,
        runtime: DurableRuntime,
        *,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
        store_timeout: float = DEFAULT_STORE_TIMEOUT,
    ) -> None:
        super().__init__(
            runtime.agents,
            store=runtime.store,
            lease_seconds=lease_seconds,
            store_timeout=store_timeout,
        )
        self.runtime = runtime
        self._durable_ids: dict[str, str] = {}
        self._cancels: set[asyncio.Task[None]] = set()

    async def _durable(
        self,
        agent_name: str,
        session: AgentSession,
        active: ActiveRun,
        messages: Sequence[ChatMessage],
        approvals: Sequence[ApprovalResponseContent],
    ) -> AgentResponse:
        try:
            if approvals:
                self._durable_ids[session.id] = self.runtime.waiting_run(session) or ""
                outcome = await self.runtime.answer(session, approvals, agent_name=agent_name)
            else:
                self._durable_ids[session.id] = active.run_id
                run_id = await self.runtime.start(
                    agent_name, messages, session_id=session.id, run_id=active.run_id
                )
                outcome = await self.runtime.outcome(run_id)
        except DurableRunError as exc:
            if exc.error_type == "CANCELLED":
                raise ServeError(
                    409, "run_cancelled", f"the run in session {session.id!r} was cancelled"
                ) from None
            raise
        finally:
            self._durable_ids.pop(session.id, None)
        return outcome.response

    async def _prepare(
        self,
        agent_name: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage],
        approvals: Sequence[ApprovalResponseContent],
        *,
        expect_messages: int | None = None,
        **queueing: Any,
    ) -> tuple[AgentLike, AgentSession, ActiveRun]:
        """As `AgentHost._prepare`; a new session is stored first, since a durable run
        loads its session from the store in whichever worker runs it."""
        if session_id is None:  # under the id the run's record already names, if any
            name = queueing.pop("session_name", None)
            session_id = public_id(await self.create_session(agent_name, owner, name))
        return await super()._prepare(
            agent_name,
            session_id,
            owner,
            messages,
            approvals,
            expect_messages=expect_messages,
            **queueing,
        )

    async def run(
        self,
        agent_name: str,
        session_id: str | None,
        owner: str,
        messages: Sequence[ChatMessage] = (),
        approvals: Sequence[ApprovalResponseContent] = (),
        **queueing: Any,
    ) -> tuple[AgentResponse, ActiveRun]:
        """One run to its end or its next approval pause, in whichever worker takes it."""
        _, session, active = await self._prepare(
            agent_name, session_id, owner, messages, approvals, **queueing
        )
        try:
            response = await self._durable(agent_name, session, active, messages, approvals)
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
        **queueing: Any,
    ) -> tuple[ActiveRun, AsyncIterator[AgentResponseUpdate]]:
        """A durable run whose messages are sent as whole updates when it is done; a
        durable run takes no instructions, output type or model settings of its own (its
        workflow records only the messages), so asking for them is refused."""
        if instructions:
            raise ServeError(
                400,
                "instructions_not_supported",
                "durable runs take no per-run instructions (an AG-UI input's context); "
                "send the context as part of the user's message",
            )
        if output_type is not None or chat_options is not None:
            refused = ServeError(
                400,
                "format_not_supported",
                "durable runs take no per-run response format or model settings "
                "(text.format); give the agent its output type in its document",
            )
            refused.param = "text.format"  # the Responses API's, the one API that asks
            raise refused
        _, session, active = await self._prepare(
            agent_name,
            session_id,
            owner,
            messages,
            approvals,
            expect_messages=expect_messages,
            **queueing,
        )

        async def updates() -> AsyncIterator[AgentResponseUpdate]:
            try:
                response = await self._durable(agent_name, session, active, messages, approvals)
                for message in response.messages:
                    for update in message_to_updates(message, message.message_id or new_id("msg")):
                        yield update
                yield AgentResponseUpdate(
                    kind=UpdateKind.FINISHED,
                    finish_reason=response.finish_reason,
                    usage=response.usage,
                )
            finally:
                await self.release(active)

        return active, updates()

    async def cancel(
        self, agent_name: str, session_id: str, owner: str, reason: str = "cancelled by the client"
    ) -> str:
        """Cancel the durable run in progress in the session (in any worker)."""
        run_id = await super().cancel(agent_name, session_id, owner, reason)
        active = self.active_run(agent_name, session_id, owner)
        durable_id = self._durable_ids.get(active.key) if active is not None else None
        if durable_id:
            task = asyncio.get_running_loop().create_task(self.runtime.cancel(durable_id))
            self._cancels.add(task)
            task.add_done_callback(self._cancels.discard)
        return run_id
