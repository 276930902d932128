"""A2A end to end: a2a-sdk's own client against the server's cards and JSON-RPC."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from a2a.client import ClientConfig, create_client
from a2a.helpers import get_artifact_text, new_data_part, new_text_message
from a2a.types import Role, SendMessageRequest, TaskState

from raf.serve import ServeSecurity
from raf.testing import call, reply
from tests.serve.conftest import TOKEN_A, TOKEN_B, Served, start


@pytest.fixture(scope="module")
def a2a_served() -> Iterator[Served]:
    yield from start(ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B]))


async def send(url: str, token: str, message: Any, *, streaming: bool = False) -> list[Any]:
    headers = {"authorization": f"Bearer {token}"}
    async with httpx.AsyncClient(headers=headers, timeout=30) as http:
        config = ClientConfig(httpx_client=http, streaming=streaming)
        client = await create_client(url, client_config=config)
        return [event async for event in client.send_message(SendMessageRequest(message=message))]


def final_task(events: list[Any]) -> Any:
    tasks = [e.task for e in events if e.HasField("task")]
    assert tasks, events
    return tasks[-1]


def outcome(events: list[Any]) -> tuple[Any, str]:
    """The last state and the answer text, from a stream of events or one task."""
    state: Any = None
    text: list[str] = []
    for event in events:
        if event.HasField("task"):
            state = event.task.status.state
            text = [get_artifact_text(a) for a in event.task.artifacts] or text
        if event.HasField("status_update"):
            state = event.status_update.status.state
        if event.HasField("artifact_update"):
            text.append(get_artifact_text(event.artifact_update.artifact))
    return state, "".join(text)


def test_the_agent_cards_are_public_and_declare_bearer_auth(a2a_served: Served) -> None:
    with a2a_served.client() as anonymous:
        root = anonymous.get("/.well-known/agent-card.json")
        assert root.status_code == 200 and root.json()["name"] == "helper"
        card = anonymous.get("/a2a/clerk/.well-known/agent-card.json").json()
        assert card["name"] == "clerk" and card["skills"][0]["tags"] == ["write_note"]
        assert card["supportedInterfaces"][0]["url"].endswith("/a2a/clerk")
        assert "bearer" in card["securitySchemes"]
        rpc = anonymous.post("/a2a/clerk", json={"jsonrpc": "2.0", "id": 1, "method": "x"})
        assert rpc.status_code == 401


async def test_a_message_becomes_a_completed_task_in_a_session(a2a_served: Served) -> None:
    a2a_served.helper.add("Bonjour!", "Still here.")
    url = f"{a2a_served.url}/a2a/helper"
    first = final_task(await send(url, TOKEN_A, new_text_message("hello", role=Role.ROLE_USER)))
    assert first.status.state == TaskState.TASK_STATE_COMPLETED, first
    assert get_artifact_text(first.artifacts[0]) == "Bonjour!", first
    follow = new_text_message("again", role=Role.ROLE_USER, context_id=first.context_id)
    streamed = await send(url, TOKEN_A, follow, streaming=True)
    assert final_task(streamed).context_id == first.context_id
    assert outcome(streamed) == (TaskState.TASK_STATE_COMPLETED, "Still here.")
    # the context is a raf session holding both turns, visible to its owner only
    with a2a_served.client(TOKEN_A) as alice, a2a_served.client(TOKEN_B) as bob:
        session = alice.get(f"/agents/helper/sessions/{first.context_id}").json()
        assert [m["role"] for m in session["messages"]] == ["user", "assistant"] * 2
        assert bob.get(f"/agents/helper/sessions/{first.context_id}").status_code == 404
    # B naming A's context id gets a conversation of its own, as for any new id: the
    # answer says nothing about A's context, and A's session is unchanged
    a2a_served.helper.add("Hello B.")
    stolen = new_text_message("peek", role=Role.ROLE_USER, context_id=first.context_id)
    own = final_task(await send(url, TOKEN_B, stolen))
    assert own.status.state == TaskState.TASK_STATE_COMPLETED, own
    assert get_artifact_text(own.artifacts[0]) == "Hello B."
    with a2a_served.client(TOKEN_A) as alice, a2a_served.client(TOKEN_B) as bob:
        assert alice.get(f"/agents/helper/sessions/{first.context_id}").json() == session
        theirs = bob.get(f"/agents/helper/sessions/{first.context_id}").json()
        assert [m["role"] for m in theirs["messages"]] == ["user", "assistant"]
        assert "peek" in str(theirs) and "Hello B." in str(theirs) and "Bonjour" not in str(theirs)


async def test_an_approval_is_asked_and_answered_over_a2a(a2a_served: Served) -> None:
    a2a_served.clerk.add(reply("", call("write_note", {"text": "via a2a"}, call_id="a1")), "Ok.")
    url = f"{a2a_served.url}/a2a/clerk"
    paused = final_task(await send(url, TOKEN_A, new_text_message("note", role=Role.ROLE_USER)))
    assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert a2a_served.notes == []
    asked = paused.status.message
    assert "write_note (a1)" in asked.parts[0].text
    answer = new_text_message("", role=Role.ROLE_USER, context_id=paused.context_id)
    answer.task_id = paused.id
    del answer.parts[:]
    answer.parts.append(new_data_part({"approvals": [{"call_id": "a1", "approved": True}]}))
    done = final_task(await send(url, TOKEN_A, answer))
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert a2a_served.notes == ["via a2a"]


async def test_another_tokens_task_is_answered_as_a_missing_one(a2a_served: Served) -> None:
    a2a_served.helper.add("For A.")
    url = f"{a2a_served.url}/a2a/helper"
    task = final_task(await send(url, TOKEN_A, new_text_message("hi", role=Role.ROLE_USER)))

    def get_task(token: str, task_id: str) -> dict[str, Any]:
        with a2a_served.client(token) as client:
            body = {"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": task_id}}
            answer = client.post("/a2a/helper", json=body, headers={"a2a-version": "1.0"})
            return dict(answer.json())

    assert get_task(TOKEN_A, task.id)["result"]["id"] == task.id
    theirs = get_task(TOKEN_B, task.id)
    missing = get_task(TOKEN_B, "no-such-task")
    assert "result" not in theirs, theirs
    assert theirs["error"]["code"] == missing["error"]["code"]
    assert theirs["error"]["message"].replace(task.id, "ID") == missing["error"]["message"].replace(
        "no-such-task", "ID"
    )
    assert "For A." not in str(theirs)
