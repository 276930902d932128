"""A run that ends without a whole answer (no text, or cut at the token limit) is reported
by every served surface in its own shape, never as a silent success."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.helpers import new_text_message
from a2a.types import Role, TaskState

from raf.core.messages import ChatMessage
from raf.core.responses import ChatResponse, FinishReason
from raf.serve import ServeSecurity
from raf.testing import reply
from tests.serve.a2a.test_a2a import final_task, send

from .conftest import TOKEN_A, TOKEN_B, Served, start
from .sse import events

CUT = ChatResponse(
    messages=[ChatMessage.assistant("The tide comes in tw")], finish_reason=FinishReason.LENGTH
)


@pytest.fixture(scope="module")
def guarded() -> Iterator[Served]:
    yield from start(ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B]), openai=False)


def test_the_native_api_names_an_empty_and_a_cut_answer(guarded: Served) -> None:
    guarded.helper.add(reply(""), CUT, "A whole answer.")
    with guarded.client(TOKEN_A) as client:
        empty = client.post("/agents/helper/runs", json={"messages": "hi"})
        assert empty.status_code == 200, empty.text
        assert empty.json()["error"]["code"] == "empty_answer"
        assert "larger model" in empty.json()["error"]["message"]
        cut = client.post("/agents/helper/runs", json={"messages": "tides?"}).json()
        assert cut["finish_reason"] == "length" and cut["error"]["code"] == "cut_off"
        assert cut["text"] == "The tide comes in tw"
        whole = client.post("/agents/helper/runs", json={"messages": "again"}).json()
        assert "error" not in whole and whole["text"] == "A whole answer."


def test_a_streamed_empty_answer_ends_in_an_error_event(guarded: Served) -> None:
    guarded.helper.add(reply(""))
    with (
        guarded.client(TOKEN_A) as client,
        client.stream(
            "POST", "/agents/helper/runs", json={"messages": "hi", "stream": True}
        ) as response,
    ):
        got = list(events(response))
    assert got[-2][0] == "update" and got[-2][1]["kind"] == "finished"
    assert got[-1][0] == "error" and got[-1][1]["error"]["code"] == "empty_answer"


async def test_a2a_fails_the_task_with_a_message(guarded: Served) -> None:
    guarded.helper.add(reply(""))
    url = f"{guarded.url}/a2a/helper"
    task = final_task(await send(url, TOKEN_A, new_text_message("hi", role=Role.ROLE_USER)))
    assert task.status.state == TaskState.TASK_STATE_FAILED, task
    said = "".join(part.text for part in task.status.message.parts)
    assert said.startswith("empty_answer: the model finished without an answer"), said


def _agui(url: str, thread: str) -> list[dict[str, Any]]:
    body = {
        "threadId": thread,
        "runId": "r1",
        "messages": [{"id": "m1", "role": "user", "content": "tides?"}],
    }
    headers = {"authorization": f"Bearer {TOKEN_A}"}
    response = httpx.post(f"{url}/agui/helper", json=body, headers=headers, timeout=30)
    assert response.status_code == 200, response.text
    return [data for _name, data in events(response)]


def test_ag_ui_ends_a_cut_answer_with_run_error(guarded: Served) -> None:
    guarded.helper.add(CUT, "A whole answer.")
    cut = _agui(guarded.url, "t-cut")
    assert cut[-1]["type"] == "RUN_ERROR" and cut[-1]["code"] == "cut_off"
    assert "output limit" in cut[-1]["message"]
    assert any(e["type"] == "TEXT_MESSAGE_CONTENT" for e in cut)  # what came is still shown
    assert _agui(guarded.url, "t-whole")[-1]["type"] == "RUN_FINISHED"
