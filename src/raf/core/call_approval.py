"""The life of one tool call's approval, and the approval state of a run.

A call that needs a human is PENDING; the human's answer makes it ANSWERED (approved) or
REFUSED (denied, for good); a run that is about to execute it CLAIMS it (stored with the
session in the session's store before anything runs, so that of every run answering it,
in any process sharing the store, exactly one executes it); the call itself SPENDS it
(`was_approved`). A call that pauses again is REOPENED: it waits for a new answer under
the same id. Any other move raises `ApprovalError`.

What is stored is unchanged: the session's pending requests and its list of spent call ids
(claimed or used), from which `stored_status` reads a call's status in another process.
`was_approved` is how a tool asks whether a human approved its call, spending it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, Protocol

from raf.core.approvals import (
    approval_requests,
    check_approval_responses,
    denied_result,
    paused_batch,
    pending_from_messages,
)
from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    Content,
    FunctionCallContent,
    FunctionResultContent,
)
from raf.core.errors import (
    ApprovalAlreadyClaimed,
    ApprovalError,
    SessionConflictError,
    SessionNotFoundError,
)
from raf.core.messages import ChatMessage, Role, new_id

if TYPE_CHECKING:
    from raf.core.sessions import AgentSession, SessionStore


class ApprovalStatus(Enum):
    """Where one call's approval stands."""

    PENDING = "pending"
    """The call waits for a human's answer."""
    ANSWERED = "answered"
    """A human approved it; no run has claimed it yet."""
    CLAIMED = "claimed"
    """A run took it to execute the call (the claim is stored before the call runs)."""
    SPENT = "spent"
    """The call used it; it answers nothing again."""
    REFUSED = "refused"
    """A human denied the call; it never runs."""


_MOVES: dict[str, dict[ApprovalStatus, ApprovalStatus]] = {
    "answer": {ApprovalStatus.PENDING: ApprovalStatus.ANSWERED},
    "refuse": {ApprovalStatus.PENDING: ApprovalStatus.REFUSED},
    "claim": {ApprovalStatus.ANSWERED: ApprovalStatus.CLAIMED},
    "spend": {ApprovalStatus.CLAIMED: ApprovalStatus.SPENT},
    "reopen": {
        ApprovalStatus.CLAIMED: ApprovalStatus.PENDING,
        ApprovalStatus.SPENT: ApprovalStatus.PENDING,
    },
}
"""Each named transition: the statuses it may start from and where each leads."""


@dataclass(kw_only=True, slots=True)
class CallApproval:
    """One call's approval and its status; the named transitions are the only moves."""

    call_id: str
    name: str = ""
    """The tool called (empty when the run knows only the id)."""
    arguments: dict[str, Any] = field(default_factory=dict)
    """The arguments the human was shown."""
    status: ApprovalStatus = ApprovalStatus.PENDING
    response: ApprovalResponseContent | None = None
    """The human's answer, once given."""
    request: ApprovalRequestContent | None = None
    """The request the human is (or was) shown, where the approval came from one."""

    @classmethod
    def of_request(
        cls, request: ApprovalRequestContent, status: ApprovalStatus = ApprovalStatus.PENDING
    ) -> CallApproval:
        return cls(
            call_id=request.call_id,
            name=request.name,
            arguments=dict(request.arguments),
            status=status,
            request=request,
        )

    @property
    def answerable(self) -> bool:
        """Whether a human's answer is wanted now (it is PENDING)."""
        return self.status is ApprovalStatus.PENDING

    def answer(self, response: ApprovalResponseContent) -> None:
        """PENDING → ANSWERED (approved) or REFUSED (denied)."""
        if response.call_id != self.call_id:
            raise ApprovalError(
                f"the answer for call {response.call_id!r} was given to call {self.call_id!r}"
            )
        self._move("answer" if response.approved else "refuse")
        self.response = response

    def claim(self) -> None:
        """ANSWERED → CLAIMED: a run takes the approval to execute the call."""
        self._move("claim")

    def spend(self) -> None:
        """CLAIMED → SPENT: the call used its approval."""
        self._move("spend")

    def reopen(self) -> None:
        """CLAIMED or SPENT → PENDING: the call paused again and waits for a new answer."""
        self._move("reopen")
        self.response = None

    def _move(self, transition: str) -> None:
        target = _MOVES[transition].get(self.status)
        if target is None:
            allowed = ", ".join(s.value for s in _MOVES[transition])
            raise ApprovalError(
                f"cannot {transition} the approval of call {self.call_id!r}: it is "
                f"{self.status.value} (only {allowed} may {transition})"
            )
        self.status = target


def stored_status(session: AgentSession, call_id: str) -> ApprovalStatus | None:
    """A call's approval status as a stored session records it: pending and spent means a
    run claimed it and has not recorded its result; None: the session knows no such call."""
    pending = any(p.call_id == call_id for p in session.pending_approvals)
    spent = call_id in session.spent_approvals
    if pending:
        return ApprovalStatus.CLAIMED if spent else ApprovalStatus.PENDING
    return ApprovalStatus.SPENT if spent else None


def session_approvals(session: AgentSession) -> list[CallApproval]:
    """Every approval a stored session waits on, in the order asked, each with the status
    its record gives: PENDING (a human may answer it) or CLAIMED (a run took it and has
    not recorded its result). Code that decides from a session's approvals reads these,
    not the stored lists."""
    spent = set(session.spent_approvals)
    return [
        CallApproval.of_request(
            request, ApprovalStatus.CLAIMED if request.call_id in spent else ApprovalStatus.PENDING
        )
        for request in session.pending_approvals
    ]


def answerable_requests(session: AgentSession) -> list[ApprovalRequestContent]:
    """The requests of a stored session's approvals that a human may answer now."""
    return [a.request for a in session_approvals(session) if a.answerable and a.request is not None]


@dataclass(kw_only=True, slots=True)
class Resumption:
    """What a resumed run does first: the batch that paused, with the human's decisions."""

    batch: list[FunctionCallContent]
    """The calls of the message that paused, with the arguments the human was shown."""
    denied: dict[str, FunctionResultContent]
    """The result of each call the human refused, by call id."""
    decided: list[str]
    """The call ids this run's answers decide (their approvals are claimed, then spent)."""


@dataclass(kw_only=True, slots=True)
class RunApprovals:
    """The approval state of one run, its only holder: the human's answers, each call's
    `CallApproval`, and the claim stored before approved calls run. The run's steps move
    it with `pause`, `resume`, `claim` and `spend`; `from_session` reads the session's
    stored form and `to_session` writes it."""

    responses: list[ApprovalResponseContent] = field(default_factory=list)
    """Decisions given to this run (they resume the paused batch)."""
    pending: list[ApprovalRequestContent] = field(default_factory=list)
    """The requests the session was waiting on when the run started."""
    spent: list[str] = field(default_factory=list)
    """Call ids whose approval was claimed or used: the session's list when the run has
    one (stored with it, so a replay is refused in any process)."""
    calls: dict[str, CallApproval] = field(default_factory=dict)
    """The approvals this run moved, by call id."""
    session: AgentSession | None = None
    """The session whose approvals these are."""
    store: SessionStore | None = None
    """Where `session` is kept: a claim is saved there before the claimed calls run."""
    spent_before: list[str] = field(default_factory=list)
    """The session's spent ids as stored: what a run that fails puts back."""
    claim_stored: bool = False
    """Whether this run saved a claim in `store` (a failure must then record the turn:
    another try would be a replay)."""
    resumed: Resumption | None = None
    """The paused batch this run resumes, with the human's decisions, until it has run."""

    # -- the session's stored form ----------------------------------------------------

    @classmethod
    def from_session(
        cls,
        session: AgentSession | None,
        responses: Sequence[ApprovalResponseContent] = (),
        store: SessionStore | None = None,
    ) -> RunApprovals:
        """The approvals of a run of `session` given `responses`, as the session stores
        them (its pending requests and spent ids); `store` keeps the session."""
        if session is None:
            return cls(responses=list(responses))
        return cls(
            responses=list(responses),
            pending=list(session.pending_approvals),
            spent=session.spent_approvals,
            session=session,
            store=store,
            spent_before=list(session.spent_approvals),
        )

    def to_session(
        self, session: AgentSession, waiting: Sequence[ApprovalRequestContent]
    ) -> dict[str, str]:
        """Record the run's end in the session: `waiting` are the requests it now waits
        on (its spent ids are the session's list already). The calls that waited and no
        longer do, by id, with their tool's name."""
        return self.wait_on(session, waiting)

    @staticmethod
    def wait_on(
        session: AgentSession, waiting: Sequence[ApprovalRequestContent] = ()
    ) -> dict[str, str]:
        """Record in `session` the requests it now waits on (none: nothing waits), for a
        run of something other than one agent (an orchestration, a workflow as an
        agent); the calls that waited and no longer do, by id, with their tool's name."""
        before = session.pending_approvals
        session.pending_approvals = list(waiting)
        if not before:
            return {}
        still = {p.call_id for p in waiting}
        return {p.call_id: p.name for p in before if p.call_id not in still}

    # -- the run's moves --------------------------------------------------------------

    def pause(
        self,
        message: ChatMessage,
        calls: Sequence[FunctionCallContent],
        reason_for: Callable[[FunctionCallContent], str | None] | None = None,
    ) -> list[ApprovalRequestContent]:
        """The requests a paused batch asks a human: one per call that needs it, each
        saying why (`reason_for`); a call whose id was approved before gets a fresh id."""
        return approval_requests(message, calls, self.spent, reason_for)

    def resume(self, conversation: Sequence[ChatMessage]) -> Resumption:
        """Answer the paused batch with this run's responses (checked against what is
        pending: `ApprovalError` when they do not fit) and say what runs."""
        pending = {p.call_id: p for p in self.pending} or pending_from_messages(conversation)
        decisions = check_approval_responses(pending, self.responses, self.spent)
        for call_id, response in decisions.items():
            self.approval(call_id).answer(response)
        batch = paused_batch(conversation, pending)
        denied = {
            c.call_id: denied_result(c, decisions[c.call_id].reason)
            for c in batch
            if c.call_id in decisions and not decisions[c.call_id].approved
        }
        self.resumed = Resumption(batch=batch, denied=denied, decided=list(decisions))
        return self.resumed

    @property
    def refused_results(self) -> Mapping[str, FunctionResultContent]:
        """The result of each call of the resumed batch the human refused, by call id
        (empty when the run resumes nothing)."""
        return self.resumed.denied if self.resumed is not None else {}

    async def claim_resumed(self) -> None:
        """Claim the approvals the resumed batch's decisions give (`claim`), before any
        of its calls runs; nothing when the run resumes nothing."""
        if self.resumed is not None and self.resumed.decided:
            await self.claim(self.resumed.decided)

    def spend_resumed(self, paused_again: Sequence[str]) -> None:
        """The resumed batch ran (`spend` its decided approvals); the run resumes
        nothing from now on."""
        resumed, self.resumed = self.resumed, None
        if resumed is not None and resumed.decided:
            self.spend(resumed.decided, paused_again)

    async def claim(self, call_ids: Sequence[str]) -> None:
        """Claim these approvals before their calls run (a refused one is only recorded),
        and save the claim in the session's store: of the runs claiming one approval, in
        any process sharing the store, only the first saves; the others get
        `ApprovalAlreadyClaimed` and run nothing."""
        for call_id in call_ids:
            approval = self.approval(call_id)
            if approval.status is not ApprovalStatus.REFUSED:
                approval.claim()
        self._record(call_ids)
        if self.store is not None and self.session is not None:
            await claim_in_store(self.store, self.session, call_ids)
            self.claim_stored = True
            self.spent_before = list(self.session.spent_approvals)

    def spend(self, decided: Sequence[str], paused_again: Sequence[str]) -> None:
        """The batch ran: a decided call that paused again (its sub-agent asks once more)
        waits for a new answer under its id; every other claim is spent, good for no
        later call."""
        again = [c for c in decided if c in paused_again]
        for call_id in again:
            approval = self.approval(call_id)
            if approval.status is not ApprovalStatus.PENDING:
                approval.reopen()
        if again:
            self.spent[:] = [c for c in self.spent if c not in again]
        for approval in self.calls.values():
            if approval.status is ApprovalStatus.CLAIMED:
                approval.spend()

    def use(self, call_id: str, response: ApprovalResponseContent) -> None:
        """A call spends its approval (claimed first when nothing claimed it)."""
        approval = self.approval(call_id)
        if approval.status is ApprovalStatus.PENDING:
            approval.answer(response)
        if approval.status is ApprovalStatus.ANSWERED:
            approval.claim()
        approval.spend()
        self._record([call_id])

    def restore_spent(self) -> None:
        """A run that failed before anything came of its claims: the session's spent ids
        go back to what is stored."""
        self.spent[:] = self.spent_before

    # -- reading ----------------------------------------------------------------------

    @property
    def claimed(self) -> list[str]:
        """Call ids claimed by this run whose calls have not used them yet."""
        return [c for c, a in self.calls.items() if a.status is ApprovalStatus.CLAIMED]

    def approval(self, call_id: str) -> CallApproval:
        """The call's approval; one this run has not moved starts where the record says."""
        found = self.calls.get(call_id)
        if found is None:
            request = next((p for p in self.pending if p.call_id == call_id), None)
            found = (
                CallApproval.of_request(request)
                if request is not None
                else CallApproval(call_id=call_id)
            )
            if call_id in self.spent:
                found.status = ApprovalStatus.SPENT
            self.calls[call_id] = found
        return found

    def status(self, call_id: str) -> ApprovalStatus:
        found = self.calls.get(call_id)
        if found is not None:
            return found.status
        return ApprovalStatus.SPENT if call_id in self.spent else ApprovalStatus.PENDING

    def decision(self, call_id: str) -> ApprovalResponseContent | None:
        for response in self.responses:
            if response.call_id == call_id:
                return response
        return None

    def _record(self, call_ids: Sequence[str]) -> None:
        for call_id in call_ids:
            if call_id not in self.spent:
                self.spent.append(call_id)


async def claim_in_store(
    store: SessionStore, session: AgentSession, call_ids: Sequence[str]
) -> None:
    """Save `session` with `call_ids` spent, before their calls run. A stale save means
    another run saved the session since it was loaded: when that run spent one of these
    approvals, `ApprovalAlreadyClaimed` (it runs the call, this one runs nothing);
    otherwise the conflict itself."""
    try:
        await store.save(session)
    except SessionConflictError as conflict:
        if conflict.stored_revision is None:
            raise
        try:
            fresh = await store.load(session.id)
        except SessionNotFoundError:
            raise conflict from None
        taken = [
            c
            for c in call_ids
            if stored_status(fresh, c) in (ApprovalStatus.CLAIMED, ApprovalStatus.SPENT)
        ]
        if taken:
            raise ApprovalAlreadyClaimed(taken[0], session.id, elsewhere=True) from None
        raise


UNRECORDED_CLAIM = (
    "no result was recorded: the run that claimed this call's approval stopped before "
    "saving it (or is still running elsewhere); whether the call ran is unknown"
)


def awaiting_answers(session: AgentSession) -> list[ApprovalRequestContent]:
    """The pending requests a human can still answer: those no run has claimed. When
    every pending request is claimed, a new message may go on (`close_unrecorded_claims`)."""
    return [
        p
        for p in session.pending_approvals
        if stored_status(session, p.call_id) is ApprovalStatus.PENDING
    ]


def close_unrecorded_claims(session: AgentSession) -> None:
    """A new message on a session whose every pending approval was claimed by a run that
    never recorded its result (killed, most likely): each unanswered call gets an error
    result saying so, and nothing waits any more, so the conversation can go on."""
    answered = {c.call_id for m in session.messages for c in m.function_results}
    open_calls = [
        c for m in session.messages for c in m.function_calls if c.call_id not in answered
    ]
    if open_calls:
        results: list[Content] = [
            FunctionResultContent(call_id=c.call_id, name=c.name, error=UNRECORDED_CLAIM)
            for c in open_calls
        ]
        session.messages.append(
            ChatMessage(role=Role.TOOL, contents=results, message_id=new_id("msg"))
        )
    session.pending_approvals = []


class _WithApprovals(Protocol):
    @property
    def approvals(self) -> RunApprovals: ...


class CallContext(Protocol):
    """What `was_approved` reads of a tool's context (a `ToolContext` is one)."""

    @property
    def call_id(self) -> str: ...

    @property
    def run(self) -> _WithApprovals | None: ...


def was_approved(
    context: CallContext, name: str | None = None, arguments: Mapping[str, Any] | None = None
) -> bool:
    """True when a human approved exactly this call, and spends that approval.

    The approval must name this call id; when the run knows what was asked (the pending
    request, or the arguments the human saw) the tool name and arguments must match it;
    and each approval is spent on one call (recorded in the session), so a model that
    reuses an approved call id later gets no free pass, in this process or another.
    """
    run = context.run
    if run is None or not context.call_id:
        return False
    approvals = run.approvals
    if approvals.status(context.call_id) in (ApprovalStatus.SPENT, ApprovalStatus.REFUSED):
        return False
    for response in approvals.responses:
        if response.call_id != context.call_id or not response.approved:
            continue
        if arguments is not None:
            if response.arguments is not None and dict(response.arguments) != dict(arguments):
                continue
            asked = [p for p in approvals.pending if p.call_id == context.call_id]
            if asked and not any(
                (name is None or p.name == name) and dict(p.arguments) == dict(arguments)
                for p in asked
            ):
                continue
        approvals.use(context.call_id, response)
        return True
    return False
