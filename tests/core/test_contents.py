"""Every content variant, message and session round-trips through the one JSON format."""

from __future__ import annotations

import json

import pytest

from raf import (
    AgentSession,
    ApprovalRequestContent,
    ApprovalResponseContent,
    ChatMessage,
    DataContent,
    ErrorContent,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    Role,
    SessionFormatError,
    TextContent,
    UsageContent,
    UsageDetails,
)
from raf.core.contents import Content, content_from_dict, content_to_dict

ALL_VARIANTS: list[Content] = [
    TextContent(text="hello ✓"),
    ReasoningContent(text="thinking", signature="sig-1"),
    ReasoningContent(text="no signature"),
    FunctionCallContent(call_id="c1", name="add", arguments={"a": 1, "b": [1, 2]}),
    FunctionCallContent(call_id="c2", name="bad", arguments={}, raw_arguments="{not json"),
    FunctionResultContent(call_id="c1", result={"sum": 3}, name="add"),
    FunctionResultContent(call_id="c2", error="boom"),
    FunctionResultContent(call_id="c3", result=None),
    ApprovalRequestContent(call_id="c4", name="rm", arguments={"path": "/x"}, reason="outside"),
    ApprovalResponseContent(call_id="c4", approved=False, reason="no"),
    ApprovalResponseContent(call_id="c4", approved=True, arguments={"path": "/x"}),
    ApprovalResponseContent(call_id="c5", approved=True, answer={"name": "Ada", "seats": 2}),
    UsageContent(usage=UsageDetails(input_tokens=3, output_tokens=4, total_tokens=7)),
    ErrorContent(message="stream broke", code="E1"),
    DataContent(uri="data:image/png;base64,AAAA", media_type="image/png"),
]


@pytest.mark.parametrize("content", ALL_VARIANTS, ids=lambda c: c.type)
def test_every_variant_round_trips_through_json(content: Content) -> None:
    text = json.dumps(content_to_dict(content))
    assert content_from_dict(json.loads(text)) == content


def test_message_and_session_round_trip() -> None:
    message = ChatMessage(role=Role.ASSISTANT, contents=list(ALL_VARIANTS), author_name="bot")
    assert ChatMessage.from_dict(json.loads(json.dumps(message.to_dict()))) == message
    session = AgentSession(messages=[ChatMessage.user("hi"), message])
    session.set_provider_state("memory", {"turns": 2})
    session.pending_approvals.append(
        ApprovalRequestContent(call_id="c9", name="rm", arguments={"p": 1})
    )
    restored = AgentSession.from_json(session.to_json())
    assert restored == session
    assert restored.get_provider_state("memory") == {"turns": 2}


def test_unknown_content_type_is_a_clear_error() -> None:
    with pytest.raises(SessionFormatError, match="unknown content type 'video'"):
        content_from_dict({"type": "video"})
    with pytest.raises(SessionFormatError, match="lacks the key 'call_id'"):
        content_from_dict({"type": "function_call", "name": "x"})


def test_session_from_newer_format_is_refused_with_advice() -> None:
    data = AgentSession(id="s1").to_dict()
    data["format"] = 99
    with pytest.raises(SessionFormatError, match="format 99.*upgrade raf-agents"):
        AgentSession.from_dict(data)


def test_truncated_session_json_names_its_source() -> None:
    text = AgentSession(id="s1", messages=[ChatMessage.user("x")]).to_json()
    with pytest.raises(SessionFormatError, match="sessions/s1.json is not valid JSON"):
        AgentSession.from_json(text[: len(text) // 2], source="sessions/s1.json")


def test_message_text_joins_text_only() -> None:
    message = ChatMessage(
        role=Role.ASSISTANT,
        contents=[ReasoningContent(text="hmm"), TextContent(text="a"), TextContent(text="b")],
    )
    assert message.text == "ab"


def test_messages_accept_roles_and_text_as_plain_strings() -> None:
    message = ChatMessage(role="assistant", contents="hello")  # type: ignore[arg-type]
    assert message.role is Role.ASSISTANT
    assert message.contents == [TextContent(text="hello")]
    mixed = ChatMessage(role="user", contents=["a", TextContent(text="b")])  # type: ignore[arg-type, list-item]
    assert mixed.text == "ab" and mixed.role is Role.USER
    with pytest.raises(ValueError, match="unknown message role 'robot'"):
        ChatMessage(role="robot")  # type: ignore[arg-type]


def test_protected_reasoning_round_trips() -> None:
    content = ReasoningContent(text="", protected_data="opaque==")
    assert content_from_dict(json.loads(json.dumps(content_to_dict(content)))) == content
