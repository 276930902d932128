"""Approvals are claimed before their calls run: of several processes resuming one paused
session with the same approval, exactly one runs the tool; the others run nothing."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from raf import (
    AgentBuilder,
    AgentRunOptions,
    AgentSession,
    ApprovalAlreadyClaimed,
    ApprovalError,
    ApprovalRequiredTool,
    FinishReason,
    SqliteSessionStore,
    ToolApprovalPending,
    ToolApprovalResponse,
    ToolContext,
    tool,
)
from raf.core.call_approval import was_approved
from raf.testing import ScriptedChatClient, call, reply
from tests.stores.conftest import StoreSpot
from tests.stores.store_kinds import SHARED_KINDS, close_store, make_store

ROOT = Path(__file__).resolve().parents[2]

RESUMER = textwrap.dedent(
    """
    import asyncio, json, sys
    from raf import (AgentBuilder, AgentRunOptions, ApprovalAlreadyClaimed,
                     ApprovalRequiredTool, ToolApprovalResponse, tool)
    from raf.testing import ScriptedChatClient
    from tests.stores.store_kinds import close_store, make_store

    kind, where, name, log = sys.argv[1:5]

    @tool
    def append_line(text: str) -> str:
        \"\"\"Append a line to the log (a side effect that must happen once).\"\"\"
        with open(log, "a") as f:
            f.write(text + "\\n")
        return "appended"

    async def main() -> None:
        store = make_store(kind, where, name)
        agent = (AgentBuilder().with_chat_client(ScriptedChatClient(["done"]))
                 .with_tool(ApprovalRequiredTool(append_line))
                 .with_session_store(store).build())
        session = await store.load("paused")
        print("loaded", flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # every resumer holds its copy now
        approve = ToolApprovalResponse(call_id="c1", approved=True)
        try:
            response = await agent.run([], session=session, options=AgentRunOptions(
                tool_approval_responses=[approve]))
            outcome = {"ran": response.text}
        except ApprovalAlreadyClaimed as exc:
            outcome = {"refused": str(exc), "call_id": exc.call_id}
        print(json.dumps(outcome), flush=True)
        await close_store(store)

    asyncio.run(main())
    """
)


@tool
def append_line(text: str) -> str:
    """Append a line to the log (a side effect that must happen once)."""
    return "appended"


def _pause(spot: StoreSpot) -> None:
    """Store session 'paused', waiting for approval of call c1."""

    async def run() -> None:
        store = make_store(spot.kind, spot.where, spot.name)
        model = ScriptedChatClient([reply("", call("append_line", text="once", call_id="c1"))])
        agent = (
            AgentBuilder()
            .with_chat_client(model)
            .with_tool(ApprovalRequiredTool(append_line))
            .with_session_store(store)
            .build()
        )
        response = await agent.run("append once", session=agent.create_session("paused"))
        assert response.finish_reason is FinishReason.AWAITING_APPROVAL
        await close_store(store)

    asyncio.run(run())


def _load(spot: StoreSpot) -> AgentSession:
    async def read() -> AgentSession:
        store = make_store(spot.kind, spot.where, spot.name)
        try:
            return await store.load("paused")
        finally:
            await close_store(store)

    return asyncio.run(read())


@pytest.mark.parametrize("spot", SHARED_KINDS, indirect=True)
def test_of_eight_resuming_processes_exactly_one_runs_the_tool(
    spot: StoreSpot, tmp_path: Path
) -> None:
    _pause(spot)
    log = tmp_path / "side-effects.log"
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", RESUMER, spot.kind, spot.where, spot.name, str(log)],
            cwd=ROOT,
            text=True,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for _ in range(8)
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            assert proc.stdout.readline().strip() == "loaded", proc.stderr
        for proc in procs:  # all at once, as near as the pipes allow
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        outcomes = []
        for proc in procs:
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err[-3000:]
            outcomes.append(json.loads(out.strip().splitlines()[-1]))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    assert log.read_text() == "once\n"  # the side effect happened exactly once
    winners = [o for o in outcomes if "ran" in o]
    losers = [o for o in outcomes if "refused" in o]
    assert [w["ran"] for w in winners] == ["done"]
    assert len(losers) == 7
    for loser in losers:
        assert loser["call_id"] == "c1"
        assert "approval for call id 'c1'" in loser["refused"]
        assert "nothing was run" in loser["refused"]

    # the winner's session ends consistent: the call answered once, nothing pending
    stored = _load(spot)
    assert stored.pending_approvals == []
    assert stored.spent_approvals == ["c1"]
    results = [c for m in stored.messages for c in m.function_results]
    assert [(r.call_id, r.result) for r in results] == [("c1", "appended")]
    assert stored.messages[-1].text == "done"


RAN: list[str] = []


class Boom(BaseException):
    """Escapes the tool loop like KeyboardInterrupt would."""


@tool
def fragile(text: str) -> str:
    """Record the call, then fail hard."""
    RAN.append(text)
    raise Boom(text)


def _approve(call_id: str) -> AgentRunOptions:
    return AgentRunOptions(
        tool_approval_responses=[ToolApprovalResponse(call_id=call_id, approved=True)]
    )


async def test_the_claim_is_stored_before_the_tool_runs(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    seen: list[list[str]] = []

    @tool
    async def peek(text: str) -> str:
        """Look at what the store holds while this call runs."""
        seen.append((await store.load("s")).spent_approvals)
        return "peeked"

    model = ScriptedChatClient([reply("", call("peek", text="x", call_id="p1")), "ok"])
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(ApprovalRequiredTool(peek))
        .with_session_store(store)
        .build()
    )
    session = agent.create_session("s")
    await agent.run("peek", session=session)
    assert (await agent.run([], session=session, options=_approve("p1"))).text == "ok"
    assert seen == [["p1"]]


async def test_a_failure_after_the_claim_keeps_it_and_answers_every_call(tmp_path: Path) -> None:
    RAN.clear()
    store = SqliteSessionStore(tmp_path / "s.db")
    model = ScriptedChatClient(
        [reply("", call("fragile", text="a", call_id="f1")), "after the failure"]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tool(ApprovalRequiredTool(fragile))
        .with_session_store(store)
        .build()
    )
    session = agent.create_session("s")
    await agent.run("go", session=session)
    with pytest.raises(Boom):
        await agent.run([], session=session, options=_approve("f1"))
    assert RAN == ["a"]
    stored = await store.load("s")
    assert stored.spent_approvals == ["f1"]  # the claim stands: another try is a replay
    assert stored.pending_approvals == []
    [result] = [c for m in stored.messages for c in m.function_results]
    assert result.call_id == "f1" and result.error is not None
    assert "may or may not have run" in result.error and "Boom" in result.error
    with pytest.raises(ApprovalAlreadyClaimed) as refused:
        await agent.run([], session=stored, options=_approve("f1"))
    assert refused.value.call_id == "f1"
    assert RAN == ["a"]
    # the session goes on: every call has its result, so a new message works
    assert (await agent.run("and now?", session=stored)).text == "after the failure"


async def test_without_a_store_a_resume_is_unchanged() -> None:
    RAN.clear()
    model = ScriptedChatClient([reply("", call("fragile", text="a", call_id="f1")), "ok"])
    agent = AgentBuilder().with_chat_client(model).with_tool(ApprovalRequiredTool(fragile))
    built = agent.build()
    session = built.create_session()
    await built.run("go", session=session)
    with pytest.raises(Boom):
        await built.run([], session=session, options=_approve("f1"))
    # nothing stored anywhere: the failed turn is forgotten and may be answered again
    assert session.spent_approvals == [] and [p.call_id for p in session.pending_approvals] == [
        "f1"
    ]


def test_a_claimed_approval_is_an_approval_error() -> None:
    assert issubclass(ApprovalAlreadyClaimed, ApprovalError)
    error = ApprovalAlreadyClaimed("c9", "s1", elsewhere=True)
    assert error.call_id == "c9" and error.session_id == "s1"
    assert "another run" in str(error) and "'c9'" in str(error)


async def test_a_tool_that_checks_its_own_approval_still_gets_it(tmp_path: Path) -> None:
    checks: list[bool] = []

    @tool
    def guarded(path: str, context: ToolContext) -> str:
        """Reads outside the workspace only with a human's yes."""
        approved = was_approved(context, "guarded", {"path": path})
        checks.append(approved)
        if not approved:
            raise ToolApprovalPending(f"read {path} outside the workspace?")
        return "outside text"

    store = SqliteSessionStore(tmp_path / "s.db")
    model = ScriptedChatClient([reply("", call("guarded", path="../x", call_id="g1")), "read"])
    agent = AgentBuilder().with_chat_client(model).with_tool(guarded)
    built = agent.with_session_store(store).build()
    session = built.create_session("s")
    assert (await built.run("read ../x", session=session)).pending_approvals
    response = await built.run([], session=session, options=_approve("g1"))
    assert response.text == "read" and checks == [False, True]
    assert (await store.load("s")).spent_approvals == ["g1"]


async def test_a_copy_loaded_after_the_claim_is_told_another_run_has_it(tmp_path: Path) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    late: list[str] = []

    @tool
    async def slow(text: str) -> str:
        """While this runs, another resumer loads the session and tries the same approval."""
        copy = await store.load("s")
        other = AgentBuilder().with_chat_client(ScriptedChatClient([])).with_tool(guarded_slow)
        try:
            await (
                other.with_session_store(store)
                .build()
                .run([], session=copy, options=_approve("s1"))
            )
        except ApprovalAlreadyClaimed as exc:
            late.append(str(exc))
        return "slow done"

    guarded_slow = ApprovalRequiredTool(slow)
    model = ScriptedChatClient([reply("", call("slow", text="x", call_id="s1")), "finished"])
    agent = AgentBuilder().with_chat_client(model).with_tool(guarded_slow)
    built = agent.with_session_store(store).build()
    session = built.create_session("s")
    await built.run("go", session=session)
    assert (await built.run([], session=session, options=_approve("s1"))).text == "finished"
    [message] = late
    assert "claimed by another run resuming this session" in message and "'s1'" in message


KILLED = textwrap.dedent(
    """
    import asyncio, sys
    from raf import (AgentBuilder, AgentRunOptions, ApprovalRequiredTool,
                     SqliteSessionStore, ToolApprovalResponse, tool)
    from raf.testing import ScriptedChatClient

    @tool
    async def append_line(text: str) -> str:
        \"\"\"Hangs once running: the test kills the process here.\"\"\"
        print("running", flush=True)
        await asyncio.sleep(600)
        return "appended"

    async def main() -> None:
        store = SqliteSessionStore(sys.argv[1])
        agent = (AgentBuilder().with_chat_client(ScriptedChatClient(["never"]))
                 .with_tool(ApprovalRequiredTool(append_line))
                 .with_session_store(store).build())
        session = await store.load("s")
        approve = ToolApprovalResponse(call_id="c1", approved=True)
        await agent.run([], session=session, options=AgentRunOptions(
            tool_approval_responses=[approve]))

    asyncio.run(main())
    """
)


async def test_a_session_whose_claimer_was_killed_goes_on_with_the_outcome_unknown(
    tmp_path: Path,
) -> None:
    store = SqliteSessionStore(tmp_path / "s.db")
    model = ScriptedChatClient(
        [reply("", call("append_line", text="once", call_id="c1")), "I cannot tell if it ran."]
    )
    agent = AgentBuilder().with_chat_client(model).with_tool(ApprovalRequiredTool(append_line))
    built = agent.with_session_store(store).build()
    await built.run("append once", session=built.create_session("s"))

    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED, str(tmp_path / "s.db")],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "running", proc.stderr
    finally:
        proc.kill()  # SIGKILL: no cleanup runs
        proc.wait()

    stored = await store.load("s")
    assert stored.spent_approvals == ["c1"]  # the claim was stored before the tool ran
    assert [p.call_id for p in stored.pending_approvals] == ["c1"]
    with pytest.raises(ApprovalAlreadyClaimed, match="claimed by another run"):
        await built.run([], session=stored, options=_approve("c1"))

    response = await built.run("did it work?", session=stored)
    assert response.text == "I cannot tell if it ran."
    again = await store.load("s")
    assert again.pending_approvals == []
    [result] = [c for m in again.messages for c in m.function_results]
    assert result.call_id == "c1" and "whether the call ran is unknown" in (result.error or "")
    assert [m.text for m in again.messages if m.text] == [
        "append once",
        "did it work?",
        "I cannot tell if it ran.",
    ]
