"""The life of one tool call's approval, and the approval state of a run.

A call that needs a human is PENDING; the human's answer makes it ANSWERED (approved) or
REFUSED (denied, for good); a run that is about to execute it CLAIMS it (stored with the
session in the session's store before anything runs, so that of every run answering it,
in any process sharing the store, exactly one executes it); the call itself SPENDS it
(`was_approved`). A call that pauses again is REOPENED: it waits for a new answer under
the same id. Any other move raises `ApprovalError`.

What is stored is unchanged: the session's pending requests and its list of spent call ids
(claimed or used), from which `stored_status` reads a call's status in another process.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any

from raf.core.contents import ApprovalRequestContent, ApprovalResponseContent
from raf.core.errors import (
    ApprovalAlreadyClaimed,
    ApprovalError,
    SessionConflictError,
    SessionNotFoundError,
)

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
class RunApprovals:
    """The approval state of one run: the human's answers, each call's `CallApproval`,
    and the claim stored before approved calls run."""

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

    @classmethod
    def for_session(
        cls,
        session: AgentSession | None,
        responses: Sequence[ApprovalResponseContent] = (),
        store: SessionStore | None = None,
    ) -> RunApprovals:
        """The approvals of a run of `session` given `responses`; `store` keeps the
        session (its claims are saved there)."""
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

    def answer(self, decisions: Mapping[str, ApprovalResponseContent]) -> None:
        """Record the human's (checked) answers: each call ANSWERED or REFUSED."""
        for call_id, response in decisions.items():
            self.approval(call_id).answer(response)

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

    def restore_spent(self) -> None:
        """A run that failed before anything came of its claims: the session's spent ids
        go back to what is stored."""
        self.spent[:] = self.spent_before

    def use(self, call_id: str, response: ApprovalResponseContent) -> None:
        """The call spends its approval (claimed first when nothing claimed it)."""
        approval = self.approval(call_id)
        if approval.status is ApprovalStatus.PENDING:
            approval.answer(response)
        if approval.status is ApprovalStatus.ANSWERED:
            approval.claim()
        approval.spend()
        self._record([call_id])

    def spend_claimed(self) -> None:
        """The batch ran: claims its calls did not use are spent, good for no later call."""
        for approval in self.calls.values():
            if approval.status is ApprovalStatus.CLAIMED:
                approval.spend()

    def reopen(self, call_ids: Sequence[str]) -> None:
        """These calls paused again: each waits for a new answer under its id."""
        for call_id in call_ids:
            approval = self.approval(call_id)
            if approval.status is not ApprovalStatus.PENDING:
                approval.reopen()
        self.spent[:] = [c for c in self.spent if c not in call_ids]

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
