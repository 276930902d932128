"""The one rule every surface applies to say whether a run's answer is whole."""

from __future__ import annotations

from typing import Any

import pytest

from raf.core.contents import DataContent, TextContent
from raf.core.messages import ChatMessage, Role
from raf.core.responses import (
    AgentResponse,
    AgentResponseUpdate,
    AnswerCheck,
    FinishReason,
    UpdateKind,
    answer_problem,
)

PNG = DataContent(uri="data:image/png;base64,iVBORw0KGgo=", media_type="image/png")


def problem_of(*updates: AgentResponseUpdate) -> str | None:
    check = AnswerCheck()
    for update in updates:
        check.see(update)
    found = check.problem
    return None if found is None else found.code


def text(value: str) -> AgentResponseUpdate:
    return AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id="m", text=value)


def finished(reason: FinishReason | None = FinishReason.STOP, **more: Any) -> AgentResponseUpdate:
    return AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=reason, **more)


@pytest.mark.parametrize(
    ("updates", "code"),
    [
        ((text("Paris."), finished()), None),
        ((finished(),), "empty_answer"),
        ((text("  \n"), finished()), "empty_answer"),
        ((finished(None),), "empty_answer"),
        ((text("The tide comes in tw"), finished(FinishReason.LENGTH)), "cut_off"),
        ((text("I can"), finished(FinishReason.CONTENT_FILTER)), "content_filter"),
        ((finished(FinishReason.CANCELLED),), None),
        ((finished(FinishReason.AWAITING_APPROVAL),), None),
        ((finished(FinishReason.COMPLETED),), None),  # a workflow that sent no message
        ((finished(value={"city": "Paris"}),), None),
        ((AgentResponseUpdate(kind=UpdateKind.CONTENT, content=PNG), finished()), None),
    ],
)
def test_a_stream_is_whole_or_names_its_problem(
    updates: tuple[AgentResponseUpdate, ...], code: str | None
) -> None:
    assert problem_of(*updates) == code


def test_a_response_is_read_by_the_same_rule() -> None:
    def response(*contents: Any, reason: FinishReason = FinishReason.STOP) -> AgentResponse:
        message = ChatMessage(role=Role.ASSISTANT, contents=list(contents))
        return AgentResponse(messages=[message], finish_reason=reason)

    assert answer_problem(response(TextContent(text="Paris."))) is None
    assert answer_problem(response(PNG)) is None
    empty = answer_problem(response())
    assert empty is not None and empty.code == "empty_answer"
    assert "larger model" in empty.message and empty.to_dict()["code"] == "empty_answer"
    cut = answer_problem(response(TextContent(text="Par"), reason=FinishReason.LENGTH))
    assert cut is not None and "raise the limit" in cut.message
    valued = response()
    valued.value = {"city": "Paris"}
    assert answer_problem(valued) is None


def test_a_workflow_that_completes_without_a_message_is_no_problem_but_not_answered() -> None:
    check = AnswerCheck()
    check.see(finished(FinishReason.COMPLETED))
    assert check.problem is None and not check.answered
    quiet = AgentResponse(messages=[], finish_reason=FinishReason.COMPLETED)
    assert answer_problem(quiet) is None
