"""`DurableAgentHost`: the same HTTP surface, with every run a durable workflow (queued
per agent, spread over the workers on one system database, paused durably on approvals)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence

from raf.core.contents import ApprovalResponseContent
from raf.core.messages import ChatMessage
from raf.core.responses import AgentResponse, AgentResponseUpdate
from raf.durable import DurableRunError, DurableRuntime
from raf.serve.errors import ServeError
from raf.serve.hosting import ActiveRun, AgentHost


class DurableAgentHost(AgentHost):
    """An `AgentHost` whose runs go through a launched `DurableRuntime`."""

    def __init__(self, runtime: DurableRuntime) -> None:
        super().__init__(runtime.agents, store=runtime.store)
        self.runtime = runtime
        self._durable_ids: dict[str, str] = {}
        self._cancels: set[asyncio.Task[None]] = set()

    async def run(
        self,
        agent_name: str,
        session_id: str,
        owner: str,
        messages: Sequence[ChatMessage] = (),
        approvals: Sequence[ApprovalResponseContent] = (),
    ) -> tuple[AgentResponse, ActiveRun]:
        """One run to its end or its next approval pause, in whichever worker takes it."""
        _, session, active = await self._prepare(agent_name, session_id, owner, messages, approvals)
        try:
            if approvals:
                run_id = self.runtime.waiting_run(session) or active.run_id
                self._durable_ids[session_id] = run_id
                outcome = await self.runtime.answer(session, approvals)
            else:
                self._durable_ids[session_id] = active.run_id
                run_id = await self.runtime.start(
                    agent_name, messages, session_id=session_id, run_id=active.run_id
                )
                outcome = await self.runtime.outcome(run_id)
        except DurableRunError as exc:
            if exc.error_type == "CANCELLED":
                raise ServeError(
                    409, "run_cancelled", f"the run in session {session_id!r} was cancelled"
                ) from None
            raise
        finally:
            self._durable_ids.pop(session_id, None)
            self.release(session_id, active)
        return outcome.response, active

    async def stream(
        self,
        agent_name: str,
        session_id: str,
        owner: str,
        messages: Sequence[ChatMessage] = (),
        approvals: Sequence[ApprovalResponseContent] = (),
    ) -> tuple[ActiveRun, AsyncIterator[AgentResponseUpdate]]:
        raise ServeError(
            400,
            "streaming_unavailable",
            "this server runs agents durably: a run's steps are recorded, not streamed; "
            "ask without streaming",
        )

    def cancel(self, agent_name: str, session_id: str, owner: str) -> ActiveRun:
        """Cancel the durable run in progress in the session (in any worker)."""
        active = super().cancel(agent_name, session_id, owner)
        run_id = self._durable_ids.get(session_id)
        if run_id is not None:
            task = asyncio.get_running_loop().create_task(self.runtime.cancel(run_id))
            self._cancels.add(task)
            task.add_done_callback(self._cancels.discard)
        return active
