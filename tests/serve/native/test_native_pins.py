"""Pinning on raf's own HTTP API: a fact or a message pinned in a session (stored, so
every worker on the store sees it) reaches the model word for word after 300 turns of
compression; pins on a run's messages; unpinning; and the errors, each saying what was
wrong."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from raf.agent.builder import AgentBuilder
from raf.context.compression import CompressionProvider, SummarizationStrategy
from raf.core.contents import ApprovalRequestContent
from raf.core.tokens import EstimatingCounter
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.stores.leases import holder_id
from raf.stores.sessions import SqliteSessionStore
from raf.testing import FunctionChatClient
from tests.context.compression.compression_helpers import (
    FACT,
    conversation_model,
    lookup,
    seen_text,
    summariser,
)

ROOM = "The meeting room is 4.12, on the fourth floor."


@dataclass
class Workers:
    """Two servers, each its own host, on one SQLite store: as two workers of a fleet."""

    urls: list[str]
    models: list[FunctionChatClient]
    store: SqliteSessionStore

    def client(self, worker: int = 0) -> httpx.Client:
        return httpx.Client(base_url=self.urls[worker], timeout=30)


def keeper(model: FunctionChatClient) -> Any:
    strategy = SummarizationStrategy(summariser(), keep_recent=6)
    compression = CompressionProvider(strategy, 300, counter=EstimatingCounter())
    return (
        AgentBuilder()
        .with_name("keeper")
        .with_chat_client(model)
        .with_tools([lookup])
        .with_context_provider(compression)
        .build()
    )


@pytest.fixture(scope="module")
def workers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workers]:
    path = Path(tmp_path_factory.mktemp("pins")) / "sessions.sqlite"
    store = SqliteSessionStore(path)
    models = [conversation_model(), conversation_model()]
    with ExitStack() as stack:
        urls = [
            stack.enter_context(
                serve_in_thread(create_app(AgentHost([keeper(model)], store=store), a2a=False))
            )
            for model in models
        ]
        yield Workers(urls, models, store)


def new_session(client: httpx.Client) -> str:
    created = client.post("/agents/keeper/sessions")
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def ask(client: httpx.Client, sid: str, messages: Any) -> dict[str, Any]:
    answer = client.post(f"/agents/keeper/sessions/{sid}/runs", json={"messages": messages})
    assert answer.status_code == 200, answer.text
    return dict(answer.json())


def test_pins_made_on_one_worker_reach_the_model_on_another_after_300_turns(
    workers: Workers,
) -> None:
    with workers.client(0) as first, workers.client(1) as second:
        sid = new_session(first)
        ask(first, sid, "question 0: hello")
        # a message sent pinned on the run
        ask(
            first,
            sid,
            [{"role": "user", "contents": [{"type": "text", "text": FACT}], "pinned": True}],
        )
        ask(first, sid, "question 3: where do we meet?")
        # a fact pinned on the session, then one of its messages pinned by index
        pinned = first.post(f"/agents/keeper/sessions/{sid}/pins", json={"text": ROOM})
        assert pinned.status_code == 201, pinned.text
        body = pinned.json()
        assert body["message"] == {
            "role": "user",
            "contents": [{"type": "text", "text": ROOM}],
            "pinned": True,
        }
        assert body["pinned"] == [2, body["index"]] and body["index"] == 6
        by_index = first.post(f"/agents/keeper/sessions/{sid}/pins", json={"index": 0})
        assert by_index.status_code == 201 and by_index.json()["pinned"] == [0, 2, 6]
        # the other worker sees the pins in the stored session
        seen = second.get(f"/agents/keeper/sessions/{sid}").json()
        assert seen["pinned"] == [0, 2, 6]
        assert [seen["messages"][i].get("pinned") for i in (0, 1, 2)] == [True, None, True]
        for turn in range(4, 300):
            ask(second if turn % 2 else first, sid, f"question {turn}: tell me about {turn}")
        last = workers.models[1].requests[-1].messages
        text = seen_text(last)
        assert FACT in text and ROOM in text and "question 0: hello" in text
        assert "question 150:" not in text  # the rest was compressed
        # unpinned on the second worker: the next run on the first no longer keeps it
        unpinned = second.delete(f"/agents/keeper/sessions/{sid}/pins/6")
        assert unpinned.status_code == 200 and unpinned.json() == {"pinned": [0, 2]}
        ask(first, sid, "question 300: and now?")
        assert ROOM not in seen_text(workers.models[0].requests[-1].messages)
        assert FACT in seen_text(workers.models[0].requests[-1].messages)


def test_what_a_pin_request_gets_wrong_is_said_and_changes_nothing(workers: Workers) -> None:
    with workers.client() as client:
        sid = new_session(client)
        ask(client, sid, "question 0: hello")
        pins = f"/agents/keeper/sessions/{sid}/pins"
        cases: list[tuple[Any, int, str, str]] = [
            ({"text": "a", "index": 0}, 422, "invalid_request", "either text"),
            ({}, 422, "invalid_request", "either text"),
            ({"text": "   "}, 422, "invalid_request", "non-empty text"),
            ({"index": 9}, 404, "unknown_message", "holds 2 messages"),
            ({"index": -1}, 422, "invalid_request", "index"),
            ({"fact": "x"}, 422, "invalid_request", "fact"),
        ]
        for body, status, code, says in cases:
            answer = client.post(pins, json=body)
            assert answer.status_code == status, (body, answer.text)
            assert answer.json()["error"]["code"] == code and says in answer.text, answer.text
        assert client.delete(f"{pins}/5").status_code == 404
        assert (
            client.post("/agents/keeper/sessions/nope/pins", json={"index": 0}).status_code == 404
        )
        bad = [{"role": "user", "contents": [], "pinned": "yes"}]
        run = client.post(f"/agents/keeper/sessions/{sid}/runs", json={"messages": bad})
        assert run.status_code == 422 and "'pinned' must be true or false" in run.text
        assert client.get(f"/agents/keeper/sessions/{sid}").json()["pinned"] == []


async def test_no_fact_is_pinned_while_the_session_waits_on_approvals(workers: Workers) -> None:
    with workers.client() as client:
        sid = new_session(client)
        ask(client, sid, "question 0: hello")
    (key,) = [k for k in await workers.store.list() if k.endswith(sid)]
    session = await workers.store.load(key)
    session.pending_approvals.append(ApprovalRequestContent(call_id="c1", name="lookup"))
    await workers.store.save(session)
    with workers.client() as client:
        answer = client.post(f"/agents/keeper/sessions/{sid}/pins", json={"text": "a fact"})
        assert answer.status_code == 409 and answer.json()["error"]["code"] == "approvals_pending"
        stored = client.get(f"/agents/keeper/sessions/{sid}").json()
        assert len(stored["messages"]) == 2 and stored["pinned"] == []


async def test_a_pin_waits_for_no_run_it_answers_409_while_one_holds_the_session(
    workers: Workers,
) -> None:
    with workers.client() as client:
        sid = new_session(client)
    (key,) = [k for k in await workers.store.list() if k.endswith(sid)]
    await workers.store.take_lease(key, holder_id("run-elsewhere"), 60)
    try:
        with workers.client(1) as client:
            answer = client.post(f"/agents/keeper/sessions/{sid}/pins", json={"text": "a fact"})
            assert answer.status_code == 409, answer.text
            assert answer.json()["error"]["code"] == "session_busy"
            assert "run-elsewhere" in answer.text
    finally:
        await workers.store.release_lease(key, holder_id("run-elsewhere"))
    assert (await workers.store.load(key)).messages == []
