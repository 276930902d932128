"""One approval's lifecycle: pending → answered → claimed → spent, or refused; every other
move raises, and a run's approvals keep the stored record a replay is refused by."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from raf.core.call_approval import (
    ApprovalStatus,
    CallApproval,
    RunApprovals,
    answerable_requests,
    session_approvals,
    stored_status,
)
from raf.core.contents import ApprovalRequestContent, ApprovalResponseContent
from raf.core.errors import ApprovalAlreadyClaimed, ApprovalError
from raf.core.sessions import AgentSession
from raf.stores.sessions import InMemorySessionStore

S = ApprovalStatus


def _yes(call_id: str = "c1") -> ApprovalResponseContent:
    return ApprovalResponseContent(call_id=call_id, approved=True)


def _no(call_id: str = "c1") -> ApprovalResponseContent:
    return ApprovalResponseContent(call_id=call_id, approved=False, reason="not now")


def test_an_approval_walks_its_lifecycle_in_order() -> None:
    approval = CallApproval(call_id="c1", name="delete", arguments={"path": "a"})
    seen = [approval.status]
    approval.answer(_yes())
    seen.append(approval.status)
    approval.claim()
    seen.append(approval.status)
    approval.spend()
    seen.append(approval.status)
    assert seen == [S.PENDING, S.ANSWERED, S.CLAIMED, S.SPENT]
    assert approval.response is not None and approval.response.approved


def test_a_denied_approval_is_refused_for_good() -> None:
    approval = CallApproval(call_id="c1")
    approval.answer(_no())
    assert approval.status is S.REFUSED
    for move in (approval.claim, approval.spend, approval.reopen, lambda: approval.answer(_yes())):
        with pytest.raises(ApprovalError, match="refused"):
            move()
    assert approval.status is S.REFUSED


def test_a_call_that_pauses_again_is_reopened_and_waits_for_a_new_answer() -> None:
    approval = CallApproval(call_id="c1")
    approval.answer(_yes())
    approval.claim()
    approval.reopen()
    assert approval.status is S.PENDING and approval.response is None
    approval.answer(_yes())
    approval.claim()
    approval.spend()
    approval.reopen()
    assert approval.status is S.PENDING


def _moves(approval: CallApproval) -> dict[str, Callable[[], None]]:
    return {
        "answer": lambda: approval.answer(_yes()),
        "refuse": lambda: approval.answer(_no()),
        "claim": approval.claim,
        "spend": approval.spend,
        "reopen": approval.reopen,
    }


LEGAL = {
    (S.PENDING, "answer"): S.ANSWERED,
    (S.PENDING, "refuse"): S.REFUSED,
    (S.ANSWERED, "claim"): S.CLAIMED,
    (S.CLAIMED, "spend"): S.SPENT,
    (S.CLAIMED, "reopen"): S.PENDING,
    (S.SPENT, "reopen"): S.PENDING,
}


@pytest.mark.parametrize("start", list(S))
@pytest.mark.parametrize("move", ["answer", "refuse", "claim", "spend", "reopen"])
def test_every_move_is_legal_from_exactly_its_listed_statuses(start: S, move: str) -> None:
    approval = CallApproval(call_id="c1", status=start)
    expected = LEGAL.get((start, move))
    if expected is None:
        with pytest.raises(ApprovalError, match=f"cannot .* call 'c1': it is {start.value}"):
            _moves(approval)[move]()
        assert approval.status is start
    else:
        _moves(approval)[move]()
        assert approval.status is expected


def test_an_answer_for_another_call_is_refused() -> None:
    approval = CallApproval(call_id="c1")
    with pytest.raises(ApprovalError, match="'c2' was given to call 'c1'"):
        approval.answer(_yes("c2"))
    assert approval.status is S.PENDING


async def test_a_runs_approvals_claim_record_the_session_and_spend() -> None:
    session = AgentSession()
    session.pending_approvals = [
        ApprovalRequestContent(call_id="c1", name="delete", arguments={"path": "a"}),
        ApprovalRequestContent(call_id="c2", name="delete", arguments={"path": "b"}),
    ]
    store = InMemorySessionStore()
    await store.save(session)
    approvals = RunApprovals.from_session(session, [_yes("c1"), _no("c2")], store)
    resumed = approvals.resume([])
    assert [c.call_id for c in resumed.batch] == ["c1", "c2"]
    assert resumed.decided == ["c1", "c2"] and list(resumed.denied) == ["c2"]
    await approvals.claim(["c1", "c2"])
    assert approvals.status("c1") is S.CLAIMED and approvals.status("c2") is S.REFUSED
    assert approvals.claim_stored
    # the record another process reads, saved before any call runs: both ids spent while
    # still pending (claimed)
    stored = await store.load(session.id)
    assert stored.spent_approvals == ["c1", "c2"]
    assert stored_status(stored, "c1") is S.CLAIMED
    assert approvals.claimed == ["c1"]
    approvals.use("c1", _yes("c1"))
    assert approvals.status("c1") is S.SPENT
    with pytest.raises(ApprovalError, match="cannot claim"):
        await approvals.claim(["c1"])


def test_the_stored_record_gives_each_status() -> None:
    session = AgentSession()
    session.pending_approvals = [ApprovalRequestContent(call_id="p", name="t", arguments={})]
    assert stored_status(session, "p") is S.PENDING
    session.spent_approvals.append("p")
    assert stored_status(session, "p") is S.CLAIMED
    session.pending_approvals = []
    assert stored_status(session, "p") is S.SPENT
    assert stored_status(session, "unknown") is None


async def test_spend_keeps_the_record_in_step_with_a_call_that_paused_again() -> None:
    session = AgentSession()
    session.pending_approvals = [
        ApprovalRequestContent(call_id="a", name="t"),
        ApprovalRequestContent(call_id="b", name="t"),
    ]
    approvals = RunApprovals.from_session(session, [_yes("a"), _yes("b")])
    approvals.resume([])
    await approvals.claim(["a", "b"])
    approvals.spend(["a", "b"], paused_again=["b"])
    assert approvals.status("a") is S.SPENT and approvals.status("b") is S.PENDING
    assert approvals.spent == ["a"] and session.spent_approvals == ["a"]


def test_a_stored_sessions_approvals_read_as_call_approvals_with_their_status() -> None:
    asked = [
        ApprovalRequestContent(call_id="c1", name="write", arguments={"path": "a"}),
        ApprovalRequestContent(call_id="c2", name="send", arguments={}),
    ]
    session = AgentSession(pending_approvals=list(asked), spent_approvals=["c2", "old"])
    approvals = session_approvals(session)
    assert [(a.call_id, a.name, a.status) for a in approvals] == [
        ("c1", "write", S.PENDING),
        ("c2", "send", S.CLAIMED),  # pending and spent: a run claimed it
    ]
    assert [a.answerable for a in approvals] == [True, False]
    assert approvals[0].request is asked[0] and approvals[0].arguments == {"path": "a"}
    assert answerable_requests(session) == [asked[0]]
    # reading changes nothing stored
    assert session.pending_approvals == asked and session.spent_approvals == ["c2", "old"]
    approvals[0].answer(_yes("c1"))
    assert approvals[0].status is S.ANSWERED and not approvals[0].answerable
    assert session_approvals(AgentSession()) == []


async def test_a_second_claim_of_one_approval_through_the_store_runs_nothing() -> None:
    session = AgentSession()
    session.pending_approvals = [ApprovalRequestContent(call_id="c1", name="delete")]
    store = InMemorySessionStore()
    await store.save(session)
    first, second = await store.load(session.id), await store.load(session.id)
    mine = RunApprovals.from_session(first, [_yes("c1")], store)
    theirs = RunApprovals.from_session(second, [_yes("c1")], store)
    for approvals in (mine, theirs):
        approvals.resume([])
    await mine.claim(["c1"])
    with pytest.raises(ApprovalAlreadyClaimed, match="claimed by another run"):
        await theirs.claim(["c1"])
    assert not theirs.claim_stored
    theirs.restore_spent()
    assert second.spent_approvals == []


def test_to_session_records_what_waits_and_says_which_calls_stopped_waiting() -> None:
    asked = [
        ApprovalRequestContent(call_id="c1", name="write"),
        ApprovalRequestContent(call_id="c2", name="send"),
    ]
    session = AgentSession(pending_approvals=list(asked))
    approvals = RunApprovals.from_session(session)
    closed = approvals.to_session(session, [asked[1]])
    assert closed == {"c1": "write"} and session.pending_approvals == [asked[1]]
    assert approvals.to_session(AgentSession(), []) == {}


def test_resume_refuses_answers_that_do_not_fit() -> None:
    session = AgentSession(pending_approvals=[ApprovalRequestContent(call_id="c1", name="t")])
    with pytest.raises(ApprovalError, match="not waiting for approval"):
        RunApprovals.from_session(session, [_yes("zz")]).resume([])


async def test_the_resumed_batch_and_its_decisions_stay_in_the_runs_approvals() -> None:
    session = AgentSession()
    session.pending_approvals = [
        ApprovalRequestContent(call_id="c1", name="delete", arguments={"path": "a"}),
        ApprovalRequestContent(call_id="c2", name="delete", arguments={"path": "b"}),
    ]
    store = InMemorySessionStore()
    await store.save(session)
    approvals = RunApprovals.from_session(session, [_yes("c1"), _no("c2")], store)
    assert approvals.resumed is None and dict(approvals.refused_results) == {}
    await approvals.claim_resumed()  # nothing resumed: nothing claimed
    assert approvals.claimed == []
    resumed = approvals.resume([])
    assert approvals.resumed is resumed
    assert list(approvals.refused_results) == ["c2"]
    assert approvals.refused_results["c2"].error
    await approvals.claim_resumed()
    assert approvals.status("c1") is S.CLAIMED and approvals.status("c2") is S.REFUSED
    approvals.spend_resumed([])
    assert approvals.status("c1") is S.SPENT
    assert approvals.resumed is None and dict(approvals.refused_results) == {}


def test_only_the_approval_holder_writes_what_a_session_waits_on() -> None:
    """Orchestrations, workflows as agents and the run's steps record what a session
    waits on through `RunApprovals`; no other module assigns `pending_approvals`."""
    import ast
    from pathlib import Path

    import raf

    root = Path(raf.__file__).parent
    holders = {root / "core" / "call_approval.py"}
    writers = []
    for path in sorted(root.rglob("*.py")):
        if path in holders:
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            for target in targets:
                if isinstance(target, ast.Attribute) and target.attr == "pending_approvals":
                    writers.append(f"{path.relative_to(root)}:{target.lineno}")
    assert writers == []


def test_wait_on_records_the_requests_and_says_which_no_longer_wait() -> None:
    session = AgentSession()
    first = ApprovalRequestContent(call_id="c1", name="delete", arguments={})
    second = ApprovalRequestContent(call_id="c2", name="send", arguments={})
    assert RunApprovals.wait_on(session, [first, second]) == {}
    assert session.pending_approvals == [first, second]
    assert RunApprovals.wait_on(session, [second]) == {"c1": "delete"}
    assert RunApprovals.wait_on(session) == {"c2": "send"}
    assert session.pending_approvals == []
