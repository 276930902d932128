"""The contract every session store keeps — memory, JSON files, SQLite, PostgreSQL and
Redis run the same tests: the four methods, revision checks, every content kind, approvals,
re-applied turns and several processes appending to one session."""

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
    ApprovalError,
    ApprovalRequiredTool,
    ChatMessage,
    FinishReason,
    SessionConflictError,
    SessionNotFoundError,
    SessionStore,
    ToolApprovalResponse,
    tool,
)
from raf.core.contents import (
    ApprovalRequestContent,
    ApprovalResponseContent,
    Content,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    TextContent,
    UsageContent,
)
from raf.core.messages import Role
from raf.core.usage import UsageDetails
from raf.testing import ScriptedChatClient, call, reply
from raf.testing.scripted import ScriptItem
from tests.stores.conftest import StoreSpot
from tests.stores.store_kinds import SHARED_KINDS, close_store, make_store

ROOT = Path(__file__).resolve().parents[2]


async def test_save_load_list_delete(spot: StoreSpot) -> None:
    store = spot.open()
    assert isinstance(store, SessionStore)
    a = AgentSession(id="a", messages=[ChatMessage.user("hi")], updated_at=1.0)
    b = AgentSession(id="b", updated_at=2.0)
    await store.save(a)
    await store.save(b)
    assert await store.load("a") == a
    assert set(await store.list()) == {"a", "b"}
    if spot.kind != "json":  # files are listed by modification time, not `updated_at`
        assert await store.list() == ["b", "a"]
    a.messages.append(ChatMessage.assistant("hello"))
    await store.save(a)
    assert (await spot.open().load("a")).messages[-1].text == "hello"
    assert await store.delete("a") is True
    assert await store.delete("a") is False
    with pytest.raises(SessionNotFoundError, match="'a'"):
        await store.load("a")
    assert await store.list() == ["b"]


async def test_a_stale_save_is_refused_and_overwrites_nothing(spot: StoreSpot) -> None:
    store = spot.open()
    await store.save(AgentSession(id="s", messages=[ChatMessage.user("first")]))
    mine = await store.load("s")
    theirs = await spot.open().load("s")
    theirs.messages.append(ChatMessage.user("theirs"))
    await spot.open().save(theirs)
    mine.messages.append(ChatMessage.user("mine"))
    with pytest.raises(SessionConflictError, match="'s'.*saved elsewhere") as caught:
        await store.save(mine)
    assert caught.value.stored_revision == theirs.revision
    assert caught.value.expected_revision == mine.revision
    assert [m.text for m in (await store.load("s")).messages] == ["first", "theirs"]


async def test_a_new_session_never_replaces_a_stored_one(spot: StoreSpot) -> None:
    store = spot.open()
    await store.save(AgentSession(id="s", messages=[ChatMessage.user("kept")]))
    with pytest.raises(SessionConflictError, match="created elsewhere"):
        await spot.open().save(AgentSession(id="s"))
    assert (await store.load("s")).messages[0].text == "kept"


async def test_a_deleted_session_is_not_brought_back(spot: StoreSpot) -> None:
    store = spot.open()
    await store.save(AgentSession(id="gone"))
    held = await store.load("gone")
    assert await spot.open().delete("gone") is True
    held.messages.append(ChatMessage.user("late"))
    with pytest.raises(SessionConflictError, match="deleted") as caught:
        await store.save(held)
    assert caught.value.stored_revision is None
    assert "gone" not in await store.list()
    with pytest.raises(SessionNotFoundError):
        await store.load("gone")


async def test_saving_the_same_copy_again_works(spot: StoreSpot) -> None:
    store = spot.open()
    session = AgentSession(id="s")
    for n in range(3):
        session.messages.append(ChatMessage.user(str(n)))
        await store.save(session)
    assert session.revision is not None and session.revision.startswith("3.")
    loaded = await spot.open().load("s")
    assert len(loaded.messages) == 3 and loaded.revision == session.revision


async def test_every_content_kind_round_trips(spot: StoreSpot) -> None:
    contents: list[Content] = [
        TextContent(text='héllo ✓ "quoted" \\ back\nslash \u2028 and 😀'),
        ReasoningContent(text="thinking", signature="sig", protected_data="opaque=="),
        FunctionCallContent(
            call_id="c1", name="f", arguments={"n": 1, "x": [1.5, None, True]}, raw_arguments="{}"
        ),
        FunctionResultContent(call_id="c1", result={"rows": [{"a": "b"}]}, name="f"),
        FunctionResultContent(call_id="c2", error="boom"),
        ApprovalRequestContent(call_id="c3", name="rm", arguments={"p": "/x"}, reason="why"),
        ApprovalResponseContent(call_id="c3", approved=False, reason="no", arguments={"p": "/x"}),
        UsageContent(usage=UsageDetails(input_tokens=3, output_tokens=4, total_tokens=7)),
        ErrorContent(message="failed", code="E1"),
        DataContent(uri="data:text/plain;base64,aGk=", media_type="text/plain"),
    ]
    session = AgentSession(
        id="every-kind",
        messages=[
            ChatMessage(role=Role.ASSISTANT, contents=contents, author_name="a", message_id="m1")
        ],
        metadata={"title": "日本語", "nested": {"list": [1, 2, {"deep": None}]}},
        provider_state={"memory": {"turns": 3, "big": 2**53, "float": 0.1}},
        request_hash="abc",
        created_at=1.25,
        updated_at=2.5,
    )
    await spot.open().save(session)
    loaded = await spot.open().load("every-kind")
    assert loaded == session
    assert json.loads(loaded.to_json()) == json.loads(session.to_json())


@tool
def remove_file(path: str) -> str:
    """Remove a file (needs approval)."""
    return f"removed {path}"


def _approving_agent(store: SessionStore, script: list[ScriptItem]) -> AgentBuilder:
    return (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(script))
        .with_tool(ApprovalRequiredTool(remove_file))
        .with_session_store(store)
    )


async def test_pending_and_answered_approvals_are_kept(spot: StoreSpot) -> None:
    first = _approving_agent(spot.open(), [reply("", call("remove_file", path="a", call_id="d1"))])
    agent = first.build()
    paused = await agent.run("clean up", session=agent.create_session("s"))
    assert paused.finish_reason is FinishReason.AWAITING_APPROVAL

    store = spot.open()  # another worker picks the session up
    waiting = await store.load("s")
    assert [(a.call_id, a.name, a.arguments) for a in waiting.pending_approvals] == [
        ("d1", "remove_file", {"path": "a"})
    ]
    resumer = _approving_agent(store, ["done"]).build()
    answer = [ToolApprovalResponse(call_id="d1", approved=True)]
    done = await resumer.run(
        [], session=waiting, options=AgentRunOptions(tool_approval_responses=answer)
    )
    assert done.text == "done"

    answered = await spot.open().load("s")
    assert answered.pending_approvals == []
    results = [c for m in answered.messages for c in m.contents if c.type == "function_result"]
    assert [(r.call_id, r.result) for r in results] == [("d1", "removed a")]
    with pytest.raises(ApprovalError):  # the approval is spent: answering again is refused
        await (
            _approving_agent(spot.open(), ["again"])
            .build()
            .run([], session=answered, options=AgentRunOptions(tool_approval_responses=answer))
        )
    assert (await spot.open().load("s")).messages == answered.messages


async def test_a_turn_is_re_applied_when_another_turn_was_saved_meanwhile(
    spot: StoreSpot,
) -> None:
    store = spot.open()
    agent = (
        AgentBuilder()
        .with_chat_client(ScriptedChatClient(["a", "b", "c", "d"]))
        .with_session_store(store)
        .build()
    )
    await agent.run("one", session=agent.create_session("s"))
    mine = await store.load("s")
    theirs = await spot.open().load("s")
    await agent.run("two", session=theirs)
    with pytest.raises(SessionConflictError, match="saved elsewhere"):
        await agent.run("refused", session=mine.snapshot())  # no retries: refused
    await agent.run("three", session=mine, options=AgentRunOptions(conflict_retries=1))
    texts = [m.text for m in (await spot.open().load("s")).messages]
    assert texts == ["one", "a", "two", "b", "three", "d"]
    assert [m.text for m in mine.messages] == texts  # the caller's copy is the stored one


CONCURRENT_TURNS = textwrap.dedent(
    """
    import asyncio, sys
    from raf import AgentBuilder, AgentRunOptions, SessionNotFoundError
    from raf.testing import ScriptedChatClient
    from tests.stores.store_kinds import close_store, make_store

    async def main() -> None:
        kind, where, name, worker, turns = sys.argv[1:6]
        store = make_store(kind, where, name)
        replies = [f"{worker} reply {n}" for n in range(int(turns))]
        agent = (
            AgentBuilder()
            .with_chat_client(ScriptedChatClient(replies))
            .with_session_store(store)
            .build()
        )
        options = AgentRunOptions(conflict_retries=1000)
        for n in range(int(turns)):
            try:
                session = await store.load("shared")
            except SessionNotFoundError:
                session = agent.create_session("shared")
            await agent.run(f"{worker} asks {n}", session=session, options=options)
        await close_store(store)

    asyncio.run(main())
    """
)


def _child(script: str, spot: StoreSpot, *args: str, **kw: object) -> subprocess.Popen[str]:
    proc: subprocess.Popen[str] = subprocess.Popen(
        [sys.executable, "-c", script, spot.kind, spot.where, spot.name, *args],
        cwd=ROOT,
        text=True,
        **kw,  # type: ignore[call-overload]
    )
    return proc


def _load(spot: StoreSpot, session_id: str) -> AgentSession:
    async def read() -> AgentSession:
        store = make_store(spot.kind, spot.where, spot.name)
        try:
            return await store.load(session_id)
        finally:
            await close_store(store)

    return asyncio.run(read())


@pytest.mark.parametrize("spot", SHARED_KINDS, indirect=True)
def test_processes_appending_to_one_session_lose_no_turn(spot: StoreSpot) -> None:
    workers, turns = 4, 25
    procs = [
        _child(CONCURRENT_TURNS, spot, f"w{n}", str(turns), stderr=subprocess.PIPE)
        for n in range(workers)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=240)
        assert proc.returncode == 0, err[-3000:]
    texts = [m.text for m in _load(spot, "shared").messages]
    expected = {f"w{w} asks {n}" for w in range(workers) for n in range(turns)}
    asked = [t for t in texts if " asks " in t]
    assert len(texts) == 2 * workers * turns, f"{len(texts)} of {2 * workers * turns} kept"
    assert sorted(asked) == sorted(expected)
    for worker in range(workers):  # each worker's turns in its own order, reply after ask
        own = [t for t in texts if t.startswith(f"w{worker} ")]
        assert own == [
            t for n in range(turns) for t in (f"w{worker} asks {n}", f"w{worker} reply {n}")
        ]


RESUMER = textwrap.dedent(
    """
    import asyncio, sys
    from raf import AgentBuilder, SessionConflictError
    from raf.testing import ScriptedChatClient
    from tests.stores.store_kinds import close_store, make_store

    async def main() -> None:
        store = make_store(*sys.argv[1:4])
        agent = (
            AgentBuilder()
            .with_chat_client(ScriptedChatClient(["late reply"]))
            .with_session_store(store)
            .build()
        )
        session = await store.load("doomed")
        print("loaded", flush=True)
        await asyncio.to_thread(sys.stdin.readline)  # another process deletes it now
        try:
            await agent.run("still there?", session=session)
        except SessionConflictError as exc:
            print("conflict:", exc, flush=True)
        else:
            print("saved", flush=True)
        await close_store(store)

    asyncio.run(main())
    """
)


@pytest.mark.parametrize("spot", SHARED_KINDS, indirect=True)
def test_a_process_holding_a_deleted_session_does_not_resurrect_it(spot: StoreSpot) -> None:
    async def prepare() -> None:
        store = make_store(spot.kind, spot.where, spot.name)
        await store.save(AgentSession(id="doomed"))
        await close_store(store)

    async def delete() -> bool:
        store = make_store(spot.kind, spot.where, spot.name)
        try:
            return await store.delete("doomed")
        finally:
            await close_store(store)

    asyncio.run(prepare())
    proc = _child(
        RESUMER, spot, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "loaded"
    assert asyncio.run(delete()) is True
    out, err = proc.communicate("go\n", timeout=60)
    assert proc.returncode == 0, err
    assert out.startswith("conflict:") and "deleted" in out
    with pytest.raises(SessionNotFoundError):
        _load(spot, "doomed")
