"""Native runs as resources on one server: background runs and their states, cancel of a
queued run, events past retention, and bad input (an unknown strategy, another caller's
run, a webhook the server refuses), each a clear error with nothing lost."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.serve.runs import RunManager
from raf.serve.webhooks import Webhooks
from tests.serve.conftest import TOKEN_A, TOKEN_B, Served, build_agents


def start(**manager: Any) -> Iterator[Served]:
    agents, models, notes = build_agents()
    host = AgentHost(agents, if_busy="enqueue")
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B])
    runs = RunManager(host, **manager)
    app = create_app(host, security, a2a=False, runs=runs)
    with serve_in_thread(app) as url:
        yield Served(url, host, models["helper"], models["clerk"], models["slow"], notes)


@pytest.fixture(scope="module")
def server() -> Iterator[Served]:
    yield from start(retention=0.2, webhooks=Webhooks("a-secret"))


def wait_ended(client: httpx.Client, agent: str, run_id: str) -> dict[str, Any]:
    for _ in range(400):
        run: dict[str, Any] = client.get(f"/agents/{agent}/runs/{run_id}").json()
        if run["ended_at"] is not None:
            return run
        time.sleep(0.025)
    raise AssertionError(f"run {run_id} did not end: {run}")


def test_a_background_run_answers_at_once_and_is_read_when_done(server: Served) -> None:
    server.helper.add("all done")
    with server.client(TOKEN_A) as client:
        started = client.post("/agents/helper/runs", json={"messages": "hi", "background": True})
        assert started.status_code == 202
        assert started.json()["state"] in ("queued", "running", "done")
        run = wait_ended(client, "helper", started.json()["id"])
        assert (run["state"], run["result"]["text"], run["input"]) == ("done", "all done", ["hi"])
        listed = client.get(f"/agents/helper/sessions/{run['session_id']}/runs").json()
        assert [r["id"] for r in listed["data"]] == [run["id"]]


def test_a_queued_run_cancelled_never_runs(server: Served) -> None:
    server.slow.add("slow answer")
    with server.client(TOKEN_A) as client:
        sid = client.post("/agents/slow/sessions").json()["id"]
        path = f"/agents/slow/sessions/{sid}/runs"
        first = client.post(path, json={"messages": "one", "background": True}).json()
        queued = client.post(path, json={"messages": "two", "background": True}).json()
        assert client.get(f"/agents/slow/runs/{queued['id']}").json()["state"] == "queued"
        assert client.post(f"/agents/slow/runs/{queued['id']}/cancel").status_code == 202
        gone = wait_ended(client, "slow", queued["id"])
        assert (gone["state"], gone["error"]["code"]) == ("cancelled", "run_cancelled")
        client.post(f"/agents/slow/runs/{first['id']}/cancel")
        assert wait_ended(client, "slow", first["id"])["state"] == "cancelled"
        session = client.get(f"/agents/slow/sessions/{sid}").json()
        texts = [m["contents"][0].get("text") for m in session["messages"] if m["role"] == "user"]
        assert texts == ["one"]


def test_events_past_retention_are_a_410_that_says_so(server: Served) -> None:
    server.helper.add("first", "second")
    with server.client(TOKEN_A) as client:
        old = client.post("/agents/helper/runs", json={"messages": "a", "stream": True})
        old_id = old.headers["raf-run-id"]
        with client.stream("GET", f"/agents/helper/runs/{old_id}/events") as response:
            assert response.status_code == 200
            assert "event: run" in response.read().decode()
        time.sleep(0.3)  # past the retention of 0.2 s; the next run's end purges it
        client.post("/agents/helper/runs", json={"messages": "b"})
        gone = client.get(f"/agents/helper/runs/{old_id}/events")
        assert gone.status_code == 410
        error = gone.json()["error"]
        assert error["code"] == "run_events_expired" and "kept 0.2 s" in error["message"]
        assert client.get(f"/agents/helper/runs/{old_id}").json()["events_expired"] is True


def test_another_callers_run_is_not_found_and_unchanged(server: Served) -> None:
    server.slow.add("slow")
    with server.client(TOKEN_A) as mine, server.client(TOKEN_B) as theirs:
        started = mine.post("/agents/slow/runs", json={"messages": "x", "background": True})
        run_id = started.json()["id"]
        sid = started.json()["session_id"]
        fake = "f" * 32

        def asks(client: httpx.Client, run: str, agent: str = "slow") -> list[httpx.Response]:
            return [
                client.get(f"/agents/{agent}/runs/{run}"),
                client.get(f"/agents/{agent}/runs/{run}/events"),
                client.post(f"/agents/{agent}/runs/{run}/cancel"),
            ]

        for real, made_up in zip(
            [*asks(theirs, run_id), *asks(mine, run_id, "helper")],
            [*asks(theirs, fake), *asks(mine, fake, "helper")],
            strict=True,
        ):  # told exactly as a run that does not exist is
            assert real.status_code == 404, real.text
            assert real.text.replace(run_id, fake) == made_up.text
        their_list = theirs.get(f"/agents/slow/sessions/{sid}/runs")
        assert their_list.status_code == 404
        assert their_list.json()["error"]["code"] == "unknown_session"
        assert mine.get(f"/agents/slow/runs/{run_id}").json()["cancel_reason"] is None
        mine.post(f"/agents/slow/runs/{run_id}/cancel")
        wait_ended(mine, "slow", run_id)


@pytest.mark.parametrize(
    ("body", "code", "words"),
    [
        ({"messages": "x", "if_busy": "later"}, "invalid_request", "reject, enqueue"),
        ({"messages": "x", "webhook": "http://127.0.0.1:9/hook"}, "webhook_refused", "loopback"),
        ({"messages": "x", "webhook": "ftp://example.com/x"}, "webhook_refused", "http"),
    ],
)
def test_bad_run_requests_are_clear_422s_and_store_nothing(
    server: Served, body: dict[str, Any], code: str, words: str
) -> None:
    with server.client(TOKEN_A) as client:
        sid = client.post("/agents/helper/sessions").json()["id"]
        answer = client.post(f"/agents/helper/sessions/{sid}/runs", json=body)
        assert answer.status_code == 422, answer.text
        error = answer.json()["error"]
        assert error["code"] == code and words in error["message"], error
        assert client.get(f"/agents/helper/sessions/{sid}").json()["messages"] == []
        assert client.get(f"/agents/helper/sessions/{sid}/runs").json()["data"] == []


def test_a_background_run_in_a_session_that_does_not_exist_is_a_404(server: Served) -> None:
    with server.client(TOKEN_A) as client:
        body = {"messages": "x", "background": True}
        answer = client.post("/agents/helper/sessions/nosuch/runs", json=body)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "unknown_session"


def test_a_bad_last_event_id_is_refused(server: Served) -> None:
    server.helper.add("ok")
    with server.client(TOKEN_A) as client:
        body = {"messages": "a", "stream": True}
        run_id = client.post("/agents/helper/runs", json=body).headers["raf-run-id"]
        bad = client.get(f"/agents/helper/runs/{run_id}/events", headers={"last-event-id": "x"})
        assert bad.status_code == 422 and "not an event id" in bad.json()["error"]["message"]
        ahead = client.get(f"/agents/helper/runs/{run_id}/events?after=99")
        assert ahead.status_code == 409 and ahead.json()["error"]["code"] == "invalid_event_id"


def test_a_server_without_a_webhook_secret_refuses_webhooks() -> None:
    for served in start():
        with served.client(TOKEN_A) as client:
            body = {"messages": "x", "webhook": "https://example.com/hook"}
            answer = client.post("/agents/helper/runs", json=body)
        assert answer.status_code == 422
        assert answer.json()["error"]["code"] == "webhooks_off"
        assert "--webhook-secret" in answer.json()["error"]["message"]


def test_a_queued_run_whose_turn_comes_while_approvals_wait_fails_at_once() -> None:
    import asyncio

    from raf import AgentBuilder, tool
    from raf.core.messages import ChatMessage, Role
    from raf.core.options import ChatOptions
    from raf.testing import FunctionChatClient, call, reply

    @tool(approval_required=True)
    def publish(text: str) -> str:
        """Publish a text."""
        return "published"

    async def model(messages: Sequence[ChatMessage], options: ChatOptions) -> ChatMessage:
        if messages[-1].role is Role.TOOL:
            return reply("done")
        await asyncio.sleep(0.5)  # long enough for a second message to queue behind it
        return reply("", call("publish", {"text": messages[-1].text}, call_id="p1"))

    agent = AgentBuilder("editor").with_chat_client(FunctionChatClient(model)).with_tool(publish)
    host = AgentHost([agent.build()], if_busy="enqueue")
    app = create_app(host, ServeSecurity.for_bind("127.0.0.1"), a2a=False)
    with serve_in_thread(app) as url, httpx.Client(base_url=url, timeout=30) as client:
        sid = client.post("/agents/editor/sessions").json()["id"]
        path = f"/agents/editor/sessions/{sid}/runs"
        first = client.post(path, json={"messages": "one", "background": True}).json()
        second = client.post(path, json={"messages": "two", "background": True}).json()
        assert wait_ended(client, "editor", first["id"])["state"] == "waiting"
        queued = wait_ended(client, "editor", second["id"])
        assert (queued["state"], queued["error"]["code"]) == ("failed", "awaiting_approval")
        session = client.get(f"/agents/editor/sessions/{sid}").json()
        assert [a["call_id"] for a in session["approvals"]] == ["p1"]
        late = client.post(path, json={"messages": "three", "if_busy": "enqueue"})
        assert late.status_code == 409 and late.json()["error"]["code"] == "awaiting_approval"
