"""What a response reads out of its messages: the answer text and the calls still waiting."""

from __future__ import annotations

import dataclasses
import inspect
import pickle

import pytest

from raf import (
    AgentResponse,
    AgentResponseUpdate,
    ApprovalRequestContent,
    ChatMessage,
    ChatResponse,
    FinishReason,
    FunctionCallContent,
    FunctionResultContent,
    ReasoningContent,
    Role,
    TextContent,
    UpdateKind,
    UsageDetails,
)
from raf.core.responses import fold_updates


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


def test_text_given_to_a_non_text_update_moves_where_it_belongs() -> None:
    reasoning = AgentResponseUpdate(kind=UpdateKind.REASONING_DELTA, text="b", reasoning="a")
    assert (reasoning.text, reasoning.reasoning) == ("", "ab")
    arguments = AgentResponseUpdate(
        kind=UpdateKind.TOOL_CALL_ARGUMENTS_DELTA, text="}", arguments_delta="{"
    )
    assert (arguments.text, arguments.arguments_delta) == ("", "{}")
    usage = AgentResponseUpdate(kind=UpdateKind.USAGE, text="dropped")
    assert (usage.text, usage.reasoning, usage.arguments_delta) == ("", "", "")
    visible = AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, text="hi")
    assert (visible.text, visible.reasoning) == ("hi", "")


def test_an_update_keeps_its_defaults_and_dataclass_behaviour() -> None:
    update = AgentResponseUpdate(kind=UpdateKind.FINISHED)
    defaults = {f.name: f.default for f in dataclasses.fields(AgentResponseUpdate)}
    assert {name: getattr(update, name) for name in defaults} == defaults | {
        "kind": UpdateKind.FINISHED
    }
    assert update.role is Role.ASSISTANT
    assert list(inspect.signature(AgentResponseUpdate).parameters) == list(defaults)
    with pytest.raises(TypeError, match="positional"):
        AgentResponseUpdate(UpdateKind.FINISHED)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="required keyword-only argument: 'kind'"):
        AgentResponseUpdate()  # type: ignore[call-arg]
    full = AgentResponseUpdate(
        kind=UpdateKind.TEXT_DELTA, message_id="m1", text="hi", model_id="gpt", value=[1]
    )
    assert pickle.loads(pickle.dumps(full)) == full
    assert dataclasses.replace(full, text="ho").text == "ho"
    assert repr(full).startswith("AgentResponseUpdate(kind=<UpdateKind.TEXT_DELTA")
    moved = dataclasses.replace(full, kind=UpdateKind.REASONING_DELTA)
    assert (moved.text, moved.reasoning) == ("", "hi")


def test_a_folded_stream_is_the_response_the_constructors_make() -> None:
    call = FunctionCallContent(call_id="c1", name="add", arguments={"a": 1})
    usage = UsageDetails(input_tokens=2, output_tokens=3, total_tokens=5)
    updates = [
        AgentResponseUpdate(kind=UpdateKind.REASONING_DELTA, message_id="m1", reasoning="hm"),
        AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id="m1", text="Hel"),
        AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id="m1", text="lo"),
        AgentResponseUpdate(kind=UpdateKind.TOOL_CALL_STARTED, message_id="m2", call_id="c1"),
        AgentResponseUpdate(kind=UpdateKind.TOOL_CALL_ENDED, message_id="m1", content=call),
        AgentResponseUpdate(kind=UpdateKind.USAGE, usage=usage),
        AgentResponseUpdate(
            kind=UpdateKind.FINISHED, finish_reason=FinishReason.TOOL_CALLS, model_id="m"
        ),
    ]
    folded = fold_updates(updates)
    assert type(folded) is ChatResponse
    assert folded == ChatResponse(
        messages=[
            ChatMessage(
                role=Role.ASSISTANT,
                contents=[ReasoningContent(text="hm"), TextContent(text="Hello"), call],
                message_id="m1",
            )
        ],
        finish_reason=FinishReason.TOOL_CALLS,
        usage=usage,
        model_id="m",
    )
    assert folded.response_id is None and folded.messages[0].author_name is None


def test_a_stream_may_name_its_role_as_a_plain_string() -> None:
    update = AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, role="tool", text="x")  # type: ignore[arg-type]
    message = fold_updates([update]).messages[0]
    assert message.role is Role.TOOL and message.message_id is None
    with pytest.raises(ValueError, match="unknown message role 'robot'"):
        fold_updates([AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, role="robot", text="x")])  # type: ignore[arg-type]
