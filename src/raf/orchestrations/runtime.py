"""One run of an orchestration: member turns journaled so a paused run resumes by replay.

Every turn a member takes is recorded in a JSON journal kept in the orchestration's
session. When a member's run ends awaiting a tool approval, the turn is journaled as
paused (with the member's session) and the whole orchestration stops. Resuming runs the
orchestration's code again from the start: finished turns return their recorded answer
without calling the member, the paused turn resumes the member's session with the
human's decisions, and the run goes on from there. The orchestration's own code must
therefore decide only from what its turns return (it does: selection, plans and ballots
are themselves turns).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol, TypeVar

from raf.core.cancellation import CancellationToken
from raf.core.contents import ApprovalRequestContent, TextContent, content_from_dict
from raf.core.errors import ApprovalError, RafError
from raf.core.messages import ChatMessage, MessageInput, Role, new_id
from raf.core.options import AgentRunOptions, ToolApprovalResponse
from raf.core.responses import (
    AgentResponseUpdate,
    FinishReason,
    ResponseFolder,
)
from raf.core.sessions import AgentSession
from raf.core.usage import UsageDetails

T = TypeVar("T")

SIGNALS_KEY = "raf.orchestration.signals"
"""Where a tool run inside a member's turn leaves a signal for the orchestration (a
handoff); the member session's metadata key."""


class OrchestrationError(RafError):
    """An orchestration cannot go on: a coordinator's unusable answer, a bad member name."""


@dataclass(kw_only=True, slots=True)
class OrchestrationResult:
    """One run's result: every visible turn in order, the answer, or what waits for a human."""

    messages: list[ChatMessage] = field(default_factory=list)
    """Visible turns in order (`author_name` says who spoke), the answer last."""
    answer: ChatMessage | None = None
    finish_reason: FinishReason = FinishReason.STOP
    pending_approvals: list[ApprovalRequestContent] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)
    """Per-mode facts: the vote tally, the magentic ledger, the rounds taken, …"""
    usage: UsageDetails | None = None
    replayed: list[str] = field(default_factory=list)
    """Message ids of the answers a resumed run took from its journal (given before it
    paused); `messages` still holds them."""
    session: AgentSession | None = None
    """The session the run's state lives in; pass it back to resume after approvals."""

    @property
    def text(self) -> str:
        return self.answer.text if self.answer is not None else ""

    @property
    def speakers(self) -> list[str]:
        """Who spoke, in order."""
        return [m.author_name or "" for m in self.messages]


class Member(Protocol):
    """What an orchestration needs of a participant: an `Agent`, or another
    orchestration's `as_agent()`."""

    name: str
    description: str

    def create_session(self, session_id: str | None = None) -> AgentSession: ...

    def run_stream(
        self,
        messages: MessageInput = None,
        session: AgentSession | None = None,
        options: AgentRunOptions | None = None,
    ) -> AsyncIterator[AgentResponseUpdate]: ...


class RunnableOrchestration(Protocol):
    """What the agent in front of an orchestration needs of it (an `Orchestration` is one):
    its name, the agents taking part, and a run, whole or as events."""

    name: str
    description: str

    def agents(self) -> list[Member]: ...

    async def run(
        self,
        task: MessageInput = None,
        *,
        session: AgentSession | None = None,
        approvals: Sequence[ToolApprovalResponse] = (),
        cancellation: CancellationToken | None = None,
        deps: Any = None,
    ) -> OrchestrationResult: ...

    def run_stream(
        self,
        task: MessageInput = None,
        *,
        session: AgentSession | None = None,
        approvals: Sequence[ToolApprovalResponse] = (),
        cancellation: CancellationToken | None = None,
        deps: Any = None,
    ) -> AsyncIterator[OrchestrationEvent]: ...


class EventKind(StrEnum):
    """What one orchestration event says."""

    TURN_STARTED = "turn_started"
    UPDATE = "update"
    TURN_COMPLETED = "turn_completed"
    NOTE = "note"
    PAUSED = "paused"
    COMPLETED = "completed"


@dataclass(kw_only=True, slots=True)
class OrchestrationEvent:
    """One event of a streamed orchestration run, tagged with the member it concerns."""

    kind: EventKind
    member: str = ""
    """The member speaking (empty for the orchestration's own events)."""
    messages: list[ChatMessage] = field(default_factory=list)
    """TURN_STARTED: what the member was given."""
    update: AgentResponseUpdate | None = None
    """UPDATE: the member's stream update, as it sent it."""
    message: ChatMessage | None = None
    """TURN_COMPLETED: the member's answer, with `author_name` set (sent again for a turn
    replayed from the journal when a paused run resumes)."""
    message_id: str = ""
    """The id of the turn's answer message (UPDATE and TURN_COMPLETED)."""
    visible: bool = True
    """Whether the turn is part of the result (a coordinator's choice of speaker is not)."""
    replayed: bool = False
    """TURN_COMPLETED: the answer comes from the journal of a resumed run (it was given,
    and shown, before the run paused)."""
    text: str = ""
    """NOTE: the orchestration's own decision, in words."""
    result: OrchestrationResult | None = None
    """PAUSED and COMPLETED: the run's result."""


@dataclass(kw_only=True, slots=True)
class TurnResult:
    """A member's finished turn: its answer and any signal a tool left for the orchestration."""

    member: str
    message: ChatMessage
    signals: dict[str, Any] = field(default_factory=dict)

    @property
    def text(self) -> str:
        return self.message.text


class TurnPaused(Exception):
    """Internal: one or more turns wait for tool approvals; the run stops here."""

    def __init__(self, pending: list[ApprovalRequestContent]) -> None:
        super().__init__(f"{len(pending)} tool call(s) wait for approval")
        self.pending = pending


class TurnCancelled(Exception):
    """Internal: a member's run was cancelled; the orchestration ends cancelled."""


Emit = Callable[[OrchestrationEvent], None]


class Runtime:
    """The journal of one orchestration run, and the one way members are called."""

    def __init__(
        self,
        state: dict[str, Any],
        *,
        approvals: Sequence[ToolApprovalResponse] = (),
        emit: Emit | None = None,
        cancellation: CancellationToken | None = None,
        deps: Any = None,
        session: AgentSession | None = None,
    ) -> None:
        self.state = state
        self.deps = deps
        """The dependencies every member's run gets (`RunContext.deps`); never journaled:
        a resumed run passes them again."""
        self.session = session
        """The orchestration's own session (its members' runs have sessions of their
        own): where a pattern keeps what lasts from one run to the next."""
        self.turns: dict[str, Any] = state.setdefault("turns", {})
        self.approvals = {a.call_id: a for a in approvals}
        self.emit = emit
        self.cancellation = cancellation
        self.usage: UsageDetails | None = None
        self.replayed: list[str] = []
        """Message ids of the answers taken from the journal in this run."""
        self._next = 0
        self._slots: list[ChatMessage | None] = []
        self._check_approvals(approvals)

    def _check_approvals(self, approvals: Sequence[ToolApprovalResponse]) -> None:
        waiting = {
            a["call_id"]
            for entry in self.turns.values()
            if entry["status"] == "paused"
            for a in entry["pending"]
        }
        if approvals and not waiting:
            raise ApprovalError(
                "approval responses were given but no member of this orchestration waits "
                "for approval in this session"
            )
        for answer in approvals:
            if answer.call_id not in waiting:
                raise ApprovalError(
                    f"call id {answer.call_id!r} is not waiting for approval in this "
                    f"orchestration (waiting: {', '.join(sorted(waiting))}); nothing was run"
                )
        if waiting and not approvals:
            raise ApprovalError(
                "this orchestration has tool calls waiting for approval: "
                + ", ".join(sorted(waiting))
                + "; answer them with tool approval responses first"
            )
        for entry in self.turns.values():
            ids = [a["call_id"] for a in entry.get("pending", [])]
            missing = [i for i in ids if i not in self.approvals]
            if entry["status"] == "paused" and missing and len(missing) < len(ids):
                raise ApprovalError(
                    f"member {entry['member']!r} waits for every one of its calls to be "
                    f"answered together; missing: {', '.join(missing)}; nothing was run"
                )

    @property
    def transcript(self) -> list[ChatMessage]:
        """The visible answers so far, in the order their turns were asked for."""
        return [m for m in self._slots if m is not None]

    def note(self, text: str) -> None:
        """Tell a streaming caller what the orchestration decided (a speaker, a plan, a tally)."""
        self._send(OrchestrationEvent(kind=EventKind.NOTE, text=text))

    def _send(self, event: OrchestrationEvent) -> None:
        if self.emit is not None:
            self.emit(event)

    def turn(
        self,
        member: Member,
        messages: Sequence[ChatMessage],
        *,
        visible: bool = True,
        instructions: str | None = None,
    ) -> Awaitable[TurnResult]:
        """Ask `member` to answer `messages` (with `instructions` added to its system prompt
        for this turn); its place in the journal is taken now, so turns started together
        (`gather`) keep their order on replay."""
        key = str(self._next)
        self._next += 1
        slot: int | None = None
        if visible:
            slot = len(self._slots)
            self._slots.append(None)
        return self._turn(key, slot, member, list(messages), instructions)

    async def _turn(
        self,
        key: str,
        slot: int | None,
        member: Member,
        messages: list[ChatMessage],
        instructions: str | None,
    ) -> TurnResult:
        entry = self.turns.get(key)
        if entry is not None and entry["member"] != member.name:
            raise OrchestrationError(
                f"the journal of this run has member {entry['member']!r} at turn {key}, not "
                f"{member.name!r}: the orchestration changed since the run paused"
            )
        if entry is not None and entry["status"] == "done":
            result = TurnResult(
                member=member.name,
                message=ChatMessage.from_dict(entry["message"]),
                signals=dict(entry.get("signals", {})),
            )
            if slot is not None:
                self._slots[slot] = result.message
            self.replayed.append(result.message.message_id or "")
            self._completed(result.message, slot is not None, replayed=True)
            return result
        options = AgentRunOptions(
            cancellation=self.cancellation, additional_instructions=instructions, deps=self.deps
        )
        if entry is not None:  # paused: resume with the decisions given, or stay paused
            session = AgentSession.from_dict(entry["session"])
            ids = [a["call_id"] for a in entry["pending"]]
            answers = [self.approvals[i] for i in ids if i in self.approvals]
            if not answers:
                raise TurnPaused(_pending(entry))
            options.tool_approval_responses = answers
            stream = member.run_stream([], session, options)
        else:
            session = member.create_session()
            self._send(
                OrchestrationEvent(
                    kind=EventKind.TURN_STARTED,
                    member=member.name,
                    messages=messages,
                    visible=slot is not None,
                )
            )
            stream = member.run_stream(messages, session, options)
        message_id = new_id("msg")
        folder = ResponseFolder()
        async for update in stream:
            folder.add(update)
            self._send(
                OrchestrationEvent(
                    kind=EventKind.UPDATE,
                    member=member.name,
                    update=update,
                    message_id=message_id,
                    visible=slot is not None,
                )
            )
        response = folder.response()
        if response.usage is not None:
            self.usage = response.usage if self.usage is None else self.usage + response.usage
        if response.finish_reason is FinishReason.AWAITING_APPROVAL:
            pending = list(session.pending_approvals) or response.pending_approvals
            self.turns[key] = {
                "status": "paused",
                "member": member.name,
                "session": session.to_dict(),
                "pending": [_approval_to_dict(p, member.name) for p in pending],
            }
            raise TurnPaused(_pending(self.turns[key]))
        if response.finish_reason is FinishReason.CANCELLED:
            raise TurnCancelled(member.name)
        message = ChatMessage(
            role=Role.ASSISTANT,
            contents=[TextContent(text=response.text)],
            author_name=member.name,
            message_id=message_id,
        )
        signals = session.metadata.get(SIGNALS_KEY, {})
        self.turns[key] = {
            "status": "done",
            "member": member.name,
            "message": message.to_dict(),
            "signals": signals,
        }
        if slot is not None:
            self._slots[slot] = message
        self._completed(message, slot is not None)
        return TurnResult(member=member.name, message=message, signals=dict(signals))

    def _completed(self, message: ChatMessage, visible: bool, *, replayed: bool = False) -> None:
        self._send(
            OrchestrationEvent(
                kind=EventKind.TURN_COMPLETED,
                member=message.author_name or "",
                message=message,
                message_id=message.message_id or "",
                visible=visible,
                replayed=replayed,
            )
        )

    async def gather(self, turns: Sequence[Awaitable[T]]) -> list[T]:
        """Run turns together; when some pause, the others still finish (and are journaled)
        before the run stops with every pending approval."""
        results = await asyncio.gather(*turns, return_exceptions=True)
        pending: list[ApprovalRequestContent] = []
        for outcome in results:
            if isinstance(outcome, TurnPaused):
                pending.extend(outcome.pending)
            elif isinstance(outcome, BaseException) and not isinstance(outcome, TurnCancelled):
                raise outcome
        cancelled = [r for r in results if isinstance(r, TurnCancelled)]
        if cancelled:
            raise cancelled[0]
        if pending:
            raise TurnPaused(pending)
        return [r for r in results if not isinstance(r, BaseException)]


def _approval_to_dict(request: ApprovalRequestContent, member: str) -> dict[str, Any]:
    why = f"asked by member {member!r}"
    return {
        "type": "approval_request",
        "call_id": request.call_id,
        "name": request.name,
        "arguments": request.arguments,
        "reason": f"{request.reason} ({why})" if request.reason else why,
    }


def _pending(entry: dict[str, Any]) -> list[ApprovalRequestContent]:
    out: list[ApprovalRequestContent] = []
    for item in entry["pending"]:
        content = content_from_dict(item)
        if isinstance(content, ApprovalRequestContent):
            out.append(content)
    return out


def said(author: str, text: str) -> ChatMessage:
    """An answer the orchestration itself gives (an aggregation, a decision)."""
    return ChatMessage(
        role=Role.ASSISTANT,
        contents=[TextContent(text=text)],
        author_name=author,
        message_id=new_id("msg"),
    )


def is_member(value: object) -> bool:
    """Whether `value` can take part as a member (an agent), rather than being a function."""
    return hasattr(value, "run_stream") and hasattr(value, "create_session")
