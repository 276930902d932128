"""What a response reads out of its messages: the answer text and the calls still waiting."""

from __future__ import annotations

from raf import (
    AgentResponse,
    ApprovalRequestContent,
    ChatMessage,
    ChatResponse,
    FunctionCallContent,
    FunctionResultContent,
    Role,
    TextContent,
)


def _assistant(*contents: object) -> ChatMessage:
    return ChatMessage(role=Role.ASSISTANT, contents=list(contents))  # type: ignore[arg-type]


def test_text_is_the_last_assistant_message_that_has_text() -> None:
    call = FunctionCallContent(call_id="c1", name="add")
    messages = [
        ChatMessage.user("question"),
        _assistant(TextContent(text="first"), call),
        ChatMessage(role=Role.TOOL, contents=[FunctionResultContent(call_id="c1", result=3)]),
        _assistant(TextContent(text="second"), TextContent(text=" part")),
        _assistant(call),
        ChatMessage.user("a later user message is not an answer"),
    ]
    assert ChatResponse(messages=messages).text == "second part"
    assert ChatResponse(messages=messages[:3]).text == "first"
    assert ChatResponse(messages=[ChatMessage.user("only a question")]).text == ""
    assert ChatResponse().text == ""


def test_pending_approvals_are_the_requests_without_a_result() -> None:
    asked = [ApprovalRequestContent(call_id=c, name="rm") for c in ("c1", "c2", "c3")]
    messages = [
        _assistant(asked[0], TextContent(text="asking"), asked[1]),
        ChatMessage(role=Role.TOOL, contents=[FunctionResultContent(call_id="c2", result="ok")]),
        _assistant(asked[2]),
    ]
    response = AgentResponse(messages=messages, session_id="s1")
    assert response.pending_approvals == [asked[0], asked[2]]
    assert response.pending_approvals[0] is asked[0]
    assert ChatResponse(messages=[_assistant(TextContent(text="done"))]).pending_approvals == []
    assert ChatResponse().pending_approvals == []
