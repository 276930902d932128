"""An approval pause waits inside the workflow (a DBOS message wait) and goes on where it
stopped when answered, without calling the model or tools again."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from pathlib import Path

import pytest
from dbos import DBOS

from raf import Agent, tool
from raf.core.contents import ApprovalResponseContent, FunctionResultContent
from raf.core.messages import ChatMessage
from raf.core.options import ChatOptions
from raf.durable import DURABLE_KEY, DurableRuntime, sqlite_url
from raf.stores.sessions import SqliteSessionStore
from raf.testing import FunctionChatClient, call, reply


@pytest.fixture
async def durable(tmp_path: Path) -> AsyncIterator[tuple[DurableRuntime, list[str], list[int]]]:
    deleted: list[str] = []
    model_calls: list[int] = []

    @tool(approval_required=True)
    def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        results = [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]
        model_calls.append(len(results))
        if not results:
            return reply("", call("delete", path="/tmp/x", call_id="d1"))
        return f"result: {results[-1].result}"

    agent = Agent(name="cleaner", chat_client=FunctionChatClient(model), tools=[delete])
    runtime = DurableRuntime(
        [agent],
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
        database=sqlite_url(tmp_path / "dbos.sqlite"),
    )
    await runtime.launch()
    try:
        yield runtime, deleted, model_calls
    finally:
        runtime.shutdown()


async def test_a_paused_run_waits_in_its_workflow_and_resumes_when_answered(
    durable: tuple[DurableRuntime, list[str], list[int]],
) -> None:
    runtime, deleted, model_calls = durable
    paused = await runtime.run(
        "cleaner", [ChatMessage.user("clean up")], session_id="s1", max_wait=60
    )
    assert paused.paused and [p.call_id for p in paused.response.pending_approvals] == ["d1"]
    status = await DBOS.get_workflow_status_async(paused.run_id)
    assert status is not None and status.status == "PENDING"  # waiting, not finished
    session = await runtime.store.load("s1")
    assert [p.call_id for p in session.pending_approvals] == ["d1"]
    assert session.metadata[DURABLE_KEY]["run_id"] == paused.run_id
    assert deleted == [] and model_calls == [0]

    done = await runtime.answer(
        session, [ApprovalResponseContent(call_id="d1", approved=True)], max_wait=60
    )
    assert done.run_id == paused.run_id and not done.paused
    assert done.response.text == "result: deleted /tmp/x"
    assert deleted == ["/tmp/x"] and model_calls == [0, 1]
    stored = await runtime.store.load("s1")
    assert stored.pending_approvals == [] and DURABLE_KEY not in stored.metadata
    await (await DBOS.retrieve_workflow_async(paused.run_id)).get_result()  # the run ends


async def test_a_refusal_reaches_the_model_and_the_tool_never_runs(
    durable: tuple[DurableRuntime, list[str], list[int]],
) -> None:
    runtime, deleted, _ = durable
    paused = await runtime.run(
        "cleaner", [ChatMessage.user("clean up")], session_id="s2", max_wait=60
    )
    session = await runtime.store.load("s2")
    done = await runtime.answer(
        session, [ApprovalResponseContent(call_id="d1", approved=False, reason="no")], max_wait=60
    )
    assert done.run_id == paused.run_id and not done.paused
    assert deleted == []
    assert "result:" in done.response.text


async def test_answers_after_the_run_stopped_waiting_start_a_new_run(tmp_path: Path) -> None:
    deleted: list[str] = []

    @tool(approval_required=True)
    def delete(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage | str:
        results = [c for m in messages for c in m.contents if isinstance(c, FunctionResultContent)]
        if not results:
            return reply("", call("delete", path="/tmp/y", call_id="d1"))
        return f"result: {results[-1].result}"

    runtime = DurableRuntime(
        [Agent(name="cleaner", chat_client=FunctionChatClient(model), tools=[delete])],
        store=SqliteSessionStore(tmp_path / "sessions.sqlite"),
        database=sqlite_url(tmp_path / "dbos.sqlite"),
        approval_wait=0.5,  # the paused run gives up waiting at once
    )
    await runtime.launch()
    try:
        paused = await runtime.run(
            "cleaner", [ChatMessage.user("go")], session_id="s3", max_wait=60
        )
        assert paused.paused
        await (await DBOS.retrieve_workflow_async(paused.run_id)).get_result()  # it ended
        session = await runtime.store.load("s3")
        assert [p.call_id for p in session.pending_approvals] == ["d1"]  # still pending
        done = await runtime.answer(
            session, [ApprovalResponseContent(call_id="d1", approved=True)], max_wait=60
        )
        assert done.run_id != paused.run_id and not done.paused
        assert done.response.text == "result: deleted /tmp/y" and deleted == ["/tmp/y"]
    finally:
        runtime.shutdown()
