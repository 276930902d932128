"""The base of every orchestration: run it directly, stream it, or use it as an agent."""

from __future__ import annotations

import asyncio
import contextlib
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

from raf.core.call_approval import RunApprovals
from raf.core.cancellation import CancellationToken
from raf.core.errors import ApprovalError, ConfigurationError
from raf.core.messages import ChatMessage, MessageInput, to_messages
from raf.core.options import ToolApprovalResponse
from raf.core.responses import FinishReason
from raf.core.sessions import AgentSession, SessionStore
from raf.core.tools import check_tool_name
from raf.orchestrations.runtime import (
    EventKind,
    Member,
    OrchestrationEvent,
    OrchestrationResult,
    Runtime,
    TurnCancelled,
    TurnPaused,
    is_member,
)

if TYPE_CHECKING:
    from raf.orchestrations.agent import OrchestrationAgent

STATE_PREFIX = "orchestration:"
"""Key prefix of a paused run's journal in the session's provider state."""


@dataclass(kw_only=True, slots=True)
class Outcome:
    """What an orchestration's own code ends with: the answer and what led to it."""

    answer: ChatMessage
    details: dict[str, Any] = field(default_factory=dict)


class Orchestration(ABC):
    """Several agents working on one task by a fixed pattern."""

    mode: str = ""

    def __init__(self, members: Sequence[Member], *, name: str, description: str = "") -> None:
        check_tool_name(name, where=f"a {self.mode} orchestration's name")
        self.name = name
        self.description = description or f"A {self.mode} orchestration of " + ", ".join(
            m.name for m in members
        )
        self.members: tuple[Member, ...] = tuple(members)
        seen: set[str] = set()
        for member in self.members:
            if member.name in seen:
                raise ConfigurationError(
                    f"orchestration {name!r}: two members are named {member.name!r}; "
                    "members are told apart by name"
                )
            seen.add(member.name)

    def member(self, name: str) -> Member:
        """The member called `name`."""
        for member in self.members:
            if member.name == name:
                return member
        raise KeyError(name)

    def agents(self) -> list[Member]:
        """Every agent taking part: the members and any leading agent (manager, coordinator,
        aggregator, phase aggregators), each once."""
        found: dict[int, Member] = {id(m): m for m in self.members}
        leads = [getattr(self, a, None) for a in ("manager", "selector", "aggregator")]
        leads += [getattr(p, "aggregator", None) for p in getattr(self, "phases", [])]
        for lead in leads:
            if is_member(lead):
                found.setdefault(id(lead), cast(Member, lead))
        return list(found.values())

    @abstractmethod
    async def orchestrate(self, rt: Runtime, conversation: list[ChatMessage]) -> Outcome:
        """The pattern itself: call members through `rt.turn`, return the answer."""

    # -- running ------------------------------------------------------------------------

    async def run(
        self,
        task: MessageInput = None,
        *,
        session: AgentSession | None = None,
        approvals: Sequence[ToolApprovalResponse] = (),
        cancellation: CancellationToken | None = None,
        deps: Any = None,
    ) -> OrchestrationResult:
        """Run on `task` (text or messages); or, with `approvals`, resume a paused run from
        `session`. `deps` reach every member's run (`RunContext.deps`: tools, dynamic
        instructions, output validators, handoff callbacks)."""
        return await self._drive(task, session, approvals, cancellation, None, deps)

    async def run_stream(
        self,
        task: MessageInput = None,
        *,
        session: AgentSession | None = None,
        approvals: Sequence[ToolApprovalResponse] = (),
        cancellation: CancellationToken | None = None,
        deps: Any = None,
    ) -> AsyncIterator[OrchestrationEvent]:
        """`run`, yielding each member's turn and updates; the last event (COMPLETED or
        PAUSED) carries the result."""
        queue: asyncio.Queue[OrchestrationEvent | None] = asyncio.Queue()
        job = asyncio.create_task(
            self._drive(task, session, approvals, cancellation, queue.put_nowait, deps)
        )
        job.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            result = job.result()
            kind = (
                EventKind.PAUSED
                if result.finish_reason is FinishReason.AWAITING_APPROVAL
                else EventKind.COMPLETED
            )
            yield OrchestrationEvent(kind=kind, result=result)
        finally:
            if not job.done():
                job.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await job

    def as_agent(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        session_store: SessionStore | None = None,
    ) -> OrchestrationAgent:
        """This orchestration behind the `Agent` interface (usable as a sub-agent too)."""
        from raf.orchestrations.agent import OrchestrationAgent

        return OrchestrationAgent(
            self, name=name, description=description, session_store=session_store
        )

    async def _drive(
        self,
        task: MessageInput,
        session: AgentSession | None,
        approvals: Sequence[ToolApprovalResponse],
        cancellation: CancellationToken | None,
        emit: Any,
        deps: Any = None,
    ) -> OrchestrationResult:
        session = session if session is not None else AgentSession()
        key = STATE_PREFIX + self.name
        stored = session.provider_state.get(key)
        request = to_messages(task)
        state: dict[str, Any]
        if isinstance(stored, dict) and _waiting(stored):
            if request:
                raise ApprovalError(
                    f"orchestration {self.name!r} waits for tool approvals in session "
                    f"{session.id!r}: resume it with approvals and no new task first"
                )
            state = stored
        else:
            state = {"request": [m.to_dict() for m in request], "turns": {}}
        rt = Runtime(
            state,
            approvals=approvals,
            emit=emit,
            cancellation=cancellation,
            deps=deps,
            session=session,
        )
        conversation = [ChatMessage.from_dict(m) for m in state.get("request", [])]
        session.provider_state[key] = state
        try:
            outcome = await self.orchestrate(rt, conversation)
        except TurnPaused as paused:
            RunApprovals.wait_on(session, paused.pending)
            return OrchestrationResult(
                messages=rt.transcript,
                finish_reason=FinishReason.AWAITING_APPROVAL,
                pending_approvals=list(paused.pending),
                usage=rt.usage,
                replayed=rt.replayed,
                session=session,
            )
        except TurnCancelled:
            session.provider_state.pop(key, None)
            RunApprovals.wait_on(session)
            return OrchestrationResult(
                messages=rt.transcript,
                finish_reason=FinishReason.CANCELLED,
                usage=rt.usage,
                replayed=rt.replayed,
                session=session,
            )
        except BaseException:
            session.provider_state.pop(key, None)
            RunApprovals.wait_on(session)
            raise
        session.provider_state.pop(key, None)
        RunApprovals.wait_on(session)
        messages = rt.transcript
        if not messages or messages[-1] is not outcome.answer:
            messages.append(outcome.answer)
        return OrchestrationResult(
            messages=messages,
            answer=outcome.answer,
            details=outcome.details,
            usage=rt.usage,
            replayed=rt.replayed,
            session=session,
        )

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, members={[m.name for m in self.members]})"


def _waiting(state: dict[str, Any]) -> bool:
    turns = state.get("turns")
    return isinstance(turns, dict) and any(
        isinstance(t, dict) and t.get("status") == "paused" for t in turns.values()
    )
