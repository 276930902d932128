"""raf's own HTTP API end to end: a real server on loopback, httpx as the client."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import httpx

from raf.stores.sessions import SqliteSessionStore
from raf.testing import call, reply
from tests.serve.conftest import Served, start
from tests.serve.sse import events


def new_session(client, agent: str = "helper") -> str:
    created = client.post(f"/agents/{agent}/sessions")
    assert created.status_code == 201, created.text
    return str(created.json()["id"])


def test_probes_and_the_agent_list(served: Served) -> None:
    with served.client() as client:
        assert client.get("/health").json() == {"status": "ok"}
        assert client.get("/ready").json() == {"status": "ready", "agents": 3}
        names = [a["name"] for a in client.get("/agents").json()["agents"]]
        assert names == ["helper", "clerk", "slow"]
        clerk = client.get("/agents/clerk").json()
        assert clerk["description"].startswith("Keeps notes") and clerk["tools"] == ["write_note"]


def test_a_session_runs_twice_and_keeps_the_conversation(served: Served) -> None:
    served.helper.add("Paris.", "About two million people.")
    with served.client() as client:
        sid = new_session(client)
        first = client.post(f"/agents/helper/sessions/{sid}/runs", json={"messages": "Capital?"})
        assert first.status_code == 200, first.text
        assert first.json()["text"] == "Paris." and first.json()["session_id"] == sid
        second = client.post(
            f"/agents/helper/sessions/{sid}/runs",
            json={"messages": [{"role": "user", "contents": [{"type": "text", "text": "Size?"}]}]},
        )
        assert second.json()["text"] == "About two million people."
        assert second.json()["finish_reason"] == "stop"
        # the model saw the first turn when answering the second
        seen = [m.text for m in served.helper.requests[-1].messages]
        assert seen[1:] == ["Capital?", "Paris.", "Size?"]
        session = client.get(f"/agents/helper/sessions/{sid}").json()
        assert [m["role"] for m in session["messages"]] == ["user", "assistant"] * 2
        assert session["agent"] == "helper" and session["running"] is False
        assert "raf_serve" not in session["metadata"]


def test_a_run_in_a_new_session_and_deleting_it(served: Served) -> None:
    served.helper.add("Hello!")
    with served.client() as client:
        answer = client.post("/agents/helper/runs", json={"messages": "hi"}).json()
        sid = answer["session_id"]
        assert answer["text"] == "Hello!" and answer["run_id"]
        assert client.delete(f"/agents/helper/sessions/{sid}").status_code == 204
        gone = client.get(f"/agents/helper/sessions/{sid}")
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "unknown_session"


def test_a_named_session_is_created_once(served: Served) -> None:
    with served.client() as client:
        made = client.post("/agents/helper/sessions", json={"session_id": "named-1"})
        assert made.status_code == 201 and made.json()["id"] == "named-1"
        again = client.post("/agents/helper/sessions", json={"session_id": "named-1"})
        assert again.status_code == 409 and again.json()["error"]["code"] == "session_exists"
        bad = client.post("/agents/helper/sessions", json={"session_id": "../etc"})
        assert bad.status_code == 400 and bad.json()["error"]["code"] == "invalid_session_id"


def test_a_streamed_run_sends_updates_as_server_sent_events(served: Served) -> None:
    served.helper.add("one two three four five six")
    with served.client() as client:
        sid = new_session(client)
        with client.stream(
            "POST",
            f"/agents/helper/sessions/{sid}/runs",
            json={"messages": "count", "stream": True},
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            got = list(events(response))
        assert got[0][0] == "run" and got[0][1]["session_id"] == sid
        updates = [data for name, data in got[1:] if name == "update"]
        deltas = [u["text"] for u in updates if u["kind"] == "text_delta"]
        assert len(deltas) > 1 and "".join(deltas) == "one two three four five six"
        assert updates[-1] == {"kind": "finished", "finish_reason": "stop"}
        stored = client.get(f"/agents/helper/sessions/{sid}").json()["messages"]
        assert stored[-1]["contents"][0]["text"] == "one two three four five six"


def test_an_approval_resumes_the_run_and_a_second_answer_is_refused(served: Served) -> None:
    served.clerk.add(reply("", call("write_note", {"text": "buy milk"}, call_id="c1")), "Done.")
    with served.client() as client:
        sid = new_session(client, "clerk")
        paused = client.post(f"/agents/clerk/sessions/{sid}/runs", json={"messages": "note it"})
        body = paused.json()
        assert body["finish_reason"] == "awaiting_approval"
        assert [(p["call_id"], p["name"]) for p in body["pending_approvals"]] == [
            ("c1", "write_note")
        ]
        assert served.notes == []
        blocked = client.post(f"/agents/clerk/sessions/{sid}/runs", json={"messages": "hurry"})
        assert blocked.status_code == 409
        assert blocked.json()["error"]["code"] == "awaiting_approval"
        done = client.post(
            f"/agents/clerk/sessions/{sid}/approvals",
            json={"responses": [{"call_id": "c1", "approved": True}]},
        )
        assert done.status_code == 200, done.text
        assert done.json()["text"] == "Done." and served.notes == ["buy milk"]
        before = client.get(f"/agents/clerk/sessions/{sid}").json()
        twice = client.post(
            f"/agents/clerk/sessions/{sid}/approvals",
            json={"responses": [{"call_id": "c1", "approved": True}]},
        )
        assert twice.status_code == 409
        assert twice.json()["error"]["code"] == "approval_not_pending"
        assert "c1" in twice.json()["error"]["message"]
        assert served.notes == ["buy milk"]
        assert client.get(f"/agents/clerk/sessions/{sid}").json() == before


def test_a_denied_call_does_not_run_and_the_answer_streams(served: Served) -> None:
    served.clerk.add(reply("", call("write_note", {"text": "secret"}, call_id="d1")), "Skipped.")
    with served.client() as client:
        sid = new_session(client, "clerk")
        client.post(f"/agents/clerk/sessions/{sid}/runs", json={"messages": "note it"})
        with client.stream(
            "POST",
            f"/agents/clerk/sessions/{sid}/approvals",
            json={
                "responses": [{"call_id": "d1", "approved": False, "reason": "no"}],
                "stream": True,
            },
        ) as response:
            got = [data for name, data in events(response) if name == "update"]
        assert "secret" not in served.notes
        assert got[-1]["finish_reason"] == "stop"
        assert "".join(u.get("text", "") for u in got if u["kind"] == "text_delta") == "Skipped."


def test_cancel_stops_a_run_and_a_late_cancel_is_refused(served: Served) -> None:
    served.slow.add("too late")
    with served.client() as client, served.client() as other:
        sid = new_session(client, "slow")
        with client.stream(
            "POST", f"/agents/slow/sessions/{sid}/runs", json={"messages": "think", "stream": True}
        ) as response:
            stream = events(response)
            name, started = next(stream)
            assert name == "run"
            busy = other.post(f"/agents/slow/sessions/{sid}/runs", json={"messages": "again"})
            assert busy.status_code == 409 and busy.json()["error"]["code"] == "session_busy"
            assert other.delete(f"/agents/slow/sessions/{sid}").status_code == 409
            running = other.get(f"/agents/slow/sessions/{sid}").json()
            assert running["running"] is True and running["run_id"] == started["run_id"]
            cancelled = other.post(f"/agents/slow/sessions/{sid}/cancel")
            assert cancelled.status_code == 202 and cancelled.json()["run_id"] == started["run_id"]
            rest = [data for name, data in stream if name == "update"]
        assert rest[-1] == {"kind": "finished", "finish_reason": "cancelled"}
        assert all("too late" not in str(u) for u in rest)
        before = client.get(f"/agents/slow/sessions/{sid}").json()
        late = client.post(f"/agents/slow/sessions/{sid}/cancel")
        assert late.status_code == 409 and late.json()["error"]["code"] == "no_run_in_progress"
        assert client.get(f"/agents/slow/sessions/{sid}").json() == before
        assert (
            before["running"] is False and before["messages"][0]["contents"][0]["text"] == "think"
        )


def test_a_failing_model_is_a_json_error_and_the_session_is_unchanged(served: Served) -> None:
    from raf.core.errors import ModelError

    served.helper.add("fine", ModelError("the provider is down", retryable=True))
    with served.client() as client:
        sid = new_session(client)
        client.post(f"/agents/helper/sessions/{sid}/runs", json={"messages": "one"})
        before = client.get(f"/agents/helper/sessions/{sid}").json()
        failed = client.post(f"/agents/helper/sessions/{sid}/runs", json={"messages": "two"})
        assert failed.status_code == 502
        assert failed.json()["error"] == {
            "code": "model_error",
            "message": (  # what the model error said stays in the server's log
                "the model provider failed; retrying later can help; "
                "the server's log has the details"
            ),
            "retryable": True,
        }
        assert client.get(f"/agents/helper/sessions/{sid}").json() == before


def test_a_client_gone_mid_stream_leaves_its_run_going_until_cancelled(served: Served) -> None:
    served.slow.add("never seen")
    with served.client() as client:
        sid = new_session(client, "slow")
        with client.stream(
            "POST", f"/agents/slow/sessions/{sid}/runs", json={"messages": "x", "stream": True}
        ) as response:
            run_id = response.headers["raf-run-id"]
            name, data = next(events(response))
            assert (name, data["run_id"]) == ("run", run_id)
        time.sleep(0.3)  # the server has seen the closed connection: the run goes on
        assert client.get(f"/agents/slow/runs/{run_id}").json()["state"] == "running"
        assert client.get(f"/agents/slow/sessions/{sid}").json()["run_id"] == run_id
        cancelled = client.post(f"/agents/slow/runs/{run_id}/cancel")
        assert cancelled.status_code == 202
        for _ in range(200):
            run = client.get(f"/agents/slow/runs/{run_id}").json()
            if run["ended_at"] is not None:
                break
            time.sleep(0.05)
        assert run["state"] == "cancelled"
        assert not client.get(f"/agents/slow/sessions/{sid}").json()["running"]
        again = client.post(f"/agents/slow/runs/{run_id}/cancel")
        assert again.status_code == 409 and again.json()["error"]["code"] == "run_ended"


async def test_two_requests_naming_one_new_session_create_it_once(tmp_path: Path) -> None:
    # SQLite works in threads, so the requests really interleave between check and save
    store = SqliteSessionStore(tmp_path / "sessions.sqlite")
    for served in start(store=store, a2a=False, openai=False):
        async with httpx.AsyncClient(base_url=served.url, timeout=30) as client:
            body = {"session_id": "race-1"}
            made = await asyncio.gather(
                *(client.post("/agents/helper/sessions", json=body) for _ in range(8))
            )
    assert sorted(r.status_code for r in made) == [201] + [409] * 7


def test_a_claim_whose_run_died_is_refused_and_a_new_message_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "sessions.sqlite"
    for served in start(store=SqliteSessionStore(path), a2a=False, openai=False):
        served.clerk.add(
            reply("", call("write_note", {"text": "x"}, call_id="k1")), "Unknown; try again?"
        )
        with served.client() as client:
            sid = new_session(client, "clerk")
            client.post(f"/agents/clerk/sessions/{sid}/runs", json={"messages": "note it"})
            waiting = client.get(f"/agents/clerk/sessions/{sid}").json()["approvals"]
            assert waiting == [{"call_id": "k1", "name": "write_note", "status": "pending"}]

            async def claim_and_die(sid: str) -> None:  # a worker claimed k1, then died
                store = SqliteSessionStore(path)
                session = await store.load(sid)
                session.spent_approvals.append("k1")
                await store.save(session)

            asyncio.run(claim_and_die(sid))
            [claimed] = client.get(f"/agents/clerk/sessions/{sid}").json()["approvals"]
            assert claimed["status"] == "claimed"  # a run's now, not the person's to answer
            refused = client.post(
                f"/agents/clerk/sessions/{sid}/approvals",
                json={"responses": [{"call_id": "k1", "approved": True}]},
            )
            assert refused.status_code == 409, refused.text
            assert "claimed by another run" in refused.json()["error"]["message"]
            goes = client.post(f"/agents/clerk/sessions/{sid}/runs", json={"messages": "well?"})
            assert goes.status_code == 200, goes.text
            assert goes.json()["text"] == "Unknown; try again?"
        assert served.notes == []


def test_the_agent_list_names_the_tools_context_providers_add(tmp_path: Path) -> None:
    from raf.agent.builder import AgentBuilder
    from raf.context.workspace import WorkspaceContextProvider
    from raf.core.function_tool import tool
    from raf.serve import AgentHost, create_app, serve_in_thread
    from raf.testing import ScriptedChatClient
    from raf.tools.files import file_tools
    from raf.tools.workspace import WorkspaceScope

    @tool(name="shout", description="Shout.")
    def shout(text: str) -> str:
        return text.upper()

    workspace = WorkspaceContextProvider(WorkspaceScope(tmp_path, name="project", policy="allow"))
    workspace.add_tools(file_tools())
    agent = (
        AgentBuilder("coder")
        .with_chat_client(ScriptedChatClient())
        .with_tool(shout)
        .with_context_provider(workspace)
        .build()
    )
    files = [t.name for t in file_tools()]
    assert len(files) > 5
    with serve_in_thread(create_app(AgentHost([agent]), a2a=False)) as url:
        listed = httpx.get(f"{url}/agents", timeout=30).json()["agents"][0]
        one = httpx.get(f"{url}/agents/coder", timeout=30).json()
    assert listed == one
    assert listed["tools"] == ["shout", *files]
    (project,) = [p for p in listed["providers"] if p["kind"] == "workspace"]
    assert project == {"name": "project", "kind": "workspace", "tools": files}


def test_the_openapi_document_describes_every_operation_and_names_raf_s_version(
    served: Served,
) -> None:
    """The OpenAPI document is the HTTP reference's source: each operation (the web UI's
    included) says what it does, and the version is raf's, not the framework's default."""
    import raf
    from raf.serve import AgentHost, create_app
    from raf.serve.ui import ServeUI

    with served.client() as client:
        published = client.get("/openapi.json").json()
    assert published["info"]["version"] == raf.__version__
    host = AgentHost(served.host.agents)
    app: Any = create_app(host, ui=ServeUI.attach(host, tracing=False))
    while not hasattr(app, "openapi"):
        app = app.app
    undescribed = [
        f"{method.upper()} {path}"
        for spec in (published, app.openapi())
        for path, operations in spec["paths"].items()
        for method, operation in operations.items()
        if not operation.get("description", "").strip()
    ]
    assert undescribed == []
