"""Streams say what a plain run says: the model that answered, and the final call ids."""

from __future__ import annotations

from raf import (
    AgentBuilder,
    AgentRunOptions,
    ApprovalRequiredTool,
    ChatMessage,
    ChatOptions,
    FinishReason,
    ToolApprovalResponse,
    UpdateKind,
    tool,
)
from raf.core.middleware import CallNext, ChatContext
from raf.core.responses import AgentResponseUpdate, ChatResponse, ResponseFolder
from raf.testing import ScriptedChatClient, call, reply

RAN: list[str] = []


@tool
def delete_note(name: str) -> str:
    """Delete a note (dangerous)."""
    RAN.append(name)
    return f"deleted {name}"


def _named(text: str, model_id: str) -> ChatResponse:
    return ChatResponse(messages=[ChatMessage.assistant(text)], model_id=model_id)


async def test_chat_middleware_sees_the_model_id_when_streaming() -> None:
    seen: list[str | None] = []

    async def record(context: ChatContext, call_next: CallNext) -> None:
        await call_next()
        assert context.result is not None
        seen.append(context.result.model_id)

    model = ScriptedChatClient([_named("hello", "scripted-7")])
    agent = AgentBuilder().with_chat_client(model).use_middleware(record).build()
    updates = [u async for u in agent.run_stream("hi")]
    assert seen == ["scripted-7"]
    [finished] = [u for u in updates if u.kind is UpdateKind.FINISHED]
    assert finished.model_id == "scripted-7"  # the agent's stream names it too


async def test_without_a_model_id_in_the_stream_the_requested_model_is_used() -> None:
    seen: list[str | None] = []

    async def record(context: ChatContext, call_next: CallNext) -> None:
        await call_next()
        assert context.result is not None
        seen.append(context.result.model_id)

    model = ScriptedChatClient(["hello"])
    agent = AgentBuilder().with_chat_client(model).use_middleware(record).build()
    options = AgentRunOptions(chat_options=ChatOptions(model_id="asked-model"))
    [u async for u in agent.run_stream("hi", options=options)]
    assert seen == ["asked-model"]


def test_model_id_survives_the_json_form_and_the_folder() -> None:
    update = AgentResponseUpdate(kind=UpdateKind.FINISHED, model_id="m-1")
    assert AgentResponseUpdate.from_dict(update.to_dict()).model_id == "m-1"
    assert "model_id" not in AgentResponseUpdate(kind=UpdateKind.FINISHED).to_dict()
    folder = ResponseFolder()
    folder.add(update)
    assert folder.response().model_id == "m-1"


async def test_a_renamed_call_id_is_the_only_id_the_stream_shows() -> None:
    RAN.clear()
    # the model reuses the approved call id "d1" for a new dangerous call
    model = ScriptedChatClient(
        [
            reply("", call("delete_note", name="a", call_id="d1")),
            "deleted a",
            reply("", call("delete_note", name="b", call_id="d1")),
        ]
    )
    agent = (
        AgentBuilder().with_chat_client(model).with_tool(ApprovalRequiredTool(delete_note)).build()
    )
    session = agent.create_session()
    [u async for u in agent.run_stream("delete a", session=session)]
    approve = AgentRunOptions(
        tool_approval_responses=[ToolApprovalResponse(call_id="d1", approved=True)]
    )
    [u async for u in agent.run_stream([], session=session, options=approve)]
    assert session.spent_approvals == ["d1"]

    updates = [u async for u in agent.run_stream("now delete b", session=session)]
    [pending] = session.pending_approvals
    assert pending.call_id != "d1"
    with_ids = [u for u in updates if u.call_id or u.content is not None]
    kinds = {u.kind for u in with_ids}
    assert UpdateKind.TOOL_CALL_ENDED in kinds and UpdateKind.APPROVAL_REQUEST in kinds
    for update in with_ids:
        assert update.call_id == pending.call_id, update.kind
        content_id = getattr(update.content, "call_id", pending.call_id)
        assert content_id == pending.call_id, update.kind
    calls = [c.call_id for m in session.messages for c in m.function_calls]
    assert calls.count(pending.call_id) == 1 and calls.count("d1") == 1
    assert updates[-1].finish_reason is FinishReason.AWAITING_APPROVAL
    assert RAN == ["a"]


async def test_a_reused_id_is_renamed_without_streaming_too() -> None:
    RAN.clear()

    @tool
    def note(text: str) -> str:
        """Harmless."""
        return text

    model = ScriptedChatClient(
        [
            reply("", call("delete_note", name="a", call_id="d1")),
            "deleted a",
            reply("", call("note", text="x", call_id="d1")),
            "noted",
        ]
    )
    agent = (
        AgentBuilder()
        .with_chat_client(model)
        .with_tools([ApprovalRequiredTool(delete_note), note])
        .build()
    )
    session = agent.create_session()
    await agent.run("delete a", session=session)
    approve = AgentRunOptions(
        tool_approval_responses=[ToolApprovalResponse(call_id="d1", approved=True)]
    )
    await agent.run([], session=session, options=approve)
    assert (await agent.run("note x", session=session)).text == "noted"
    ids = [c.call_id for m in session.messages for c in m.function_calls]
    results = [c.call_id for m in session.messages for c in m.function_results]
    assert len(set(ids)) == 2 and ids[0] == "d1"
    assert results == ids  # every call answered under its own, unique id
