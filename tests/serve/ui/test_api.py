"""The UI's HTTP side without a browser: what is served, to whom, and bad requests."""

from __future__ import annotations

import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from raf import AgentBuilder, tool
from raf.serve import AgentHost, ServeSecurity, create_app, serve_in_thread
from raf.serve.ui import ServeUI
from raf.testing import ScriptedChatClient, call, reply
from raf.workflow import Executor, InputResponse, WorkflowBuilder, WorkflowContext, handler

TOKEN_A = "ui-token-a-0123456789abcdef"
TOKEN_B = "ui-token-b-0123456789abcdef"


@tool(name="shout", description="Upper-case a text.")
def shout(text: str) -> str:
    return text.upper()


class Ask(Executor):
    @handler
    async def ask(self, text: str, ctx: WorkflowContext[str]) -> None:
        await ctx.request_input(f"ok to send {text}?", str)

    @handler
    async def answered(self, answer: InputResponse[str], ctx: WorkflowContext[str]) -> None:
        await ctx.yield_output(f"{answer.response}")


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    model = ScriptedChatClient(
        [reply("", call("shout", {"text": "hi"}, call_id="c1")), "HI it is."] * 5
    )
    agent = AgentBuilder().with_name("loud").with_chat_client(model).with_tool(shout).build()
    host = AgentHost([agent])
    flow = WorkflowBuilder("ask", start=Ask("asker")).build()
    ui = ServeUI.attach(host, [flow])
    security = ServeSecurity.for_bind("127.0.0.1", tokens=[TOKEN_A, TOKEN_B])
    with serve_in_thread(create_app(host, security, ui=ui)) as served:
        yield served


def client(url: str, token: str = TOKEN_A) -> httpx.Client:
    return httpx.Client(base_url=url, headers={"authorization": f"Bearer {token}"}, timeout=30)


def test_the_page_is_served_with_a_strict_content_security_policy(url: str) -> None:
    with client(url) as http:
        page = http.get("/ui")
        assert page.status_code == 200
        assert '<script src="/ui/static/app.js"' in page.text
        policy = page.headers["content-security-policy"]
        assert "script-src 'self'" in policy and "unsafe-inline" not in policy
        for name in ("base", "chat", "pages", "workflows", "app"):
            assert f'<script src="/ui/static/{name}.js" defer>' in page.text
            script = http.get(f"/ui/static/{name}.js")
            assert script.headers["content-type"].startswith("text/javascript")
        assert http.get("/ui/static/style.css").status_code == 200
        # only the page's own files: nothing else of the package folder
        assert http.get("/ui/static/__init__.py").status_code == 404
        assert http.get("/ui/static/..%2F__init__.py").status_code == 404
    # the page's files hold no data and load without a token; everything else needs one
    assert httpx.get(f"{url}/ui").status_code == 200
    assert httpx.get(f"{url}/ui/static/app.js").status_code == 200
    for path in ("/ui/api/catalog", "/ui/api/agents/loud/sessions", "/agents"):
        assert httpx.get(f"{url}{path}").status_code == 401, path


def test_the_catalog_lists_agents_and_workflow_graphs(url: str) -> None:
    with client(url) as http:
        catalog = http.get("/ui/api/catalog").json()
    assert [a["name"] for a in catalog["agents"]] == ["loud"]
    assert catalog["agents"][0]["tools"] == ["shout"]
    assert catalog["workflows"] == [
        {"name": "ask", "description": "", "start": "asker", "nodes": ["asker"], "edges": []}
    ]


def test_sessions_and_recorded_runs_are_only_the_callers(url: str) -> None:
    with client(url) as http:
        sid = http.post("/agents/loud/sessions").json()["id"]
        done = http.post(f"/agents/loud/sessions/{sid}/runs", json={"messages": "hi"}).json()
        assert done["text"] == "HI it is."
        listed = http.get("/ui/api/agents/loud/sessions").json()["sessions"]
        assert [s["id"] for s in listed] == [sid]
        assert listed[0]["title"] == "hi"
        runs = http.get(f"/ui/api/agents/loud/sessions/{sid}/runs").json()["runs"]
    assert len(runs) == 1
    kinds = [s["kind"] for s in runs[0]["spans"]]
    assert kinds == ["run", "model", "tool", "model"]
    assert all(s["duration_ms"] is not None and s["duration_ms"] >= 0 for s in runs[0]["spans"])
    tool_span = runs[0]["spans"][2]
    assert tool_span["attributes"]["arguments"] == {"text": "hi"}
    first, second = runs[0]["requests"]
    assert [t["name"] for t in first["tools"]] == ["shout"]
    assert first["tools"][0]["parameters"]["properties"]["text"]["type"] == "string"
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool"]
    assert first["estimated_input_tokens"] > 0
    with client(url, TOKEN_B) as other:
        assert other.get("/ui/api/agents/loud/sessions").json()["sessions"] == []
        assert other.get(f"/ui/api/agents/loud/sessions/{sid}/runs").status_code == 404


def test_traces_are_opentelemetry_spans_or_the_recorders(url: str) -> None:
    with client(url) as http:
        sid = http.post("/agents/loud/sessions").json()["id"]
        http.post(f"/agents/loud/sessions/{sid}/runs", json={"messages": "hi"})
        traces = http.get(f"/ui/api/agents/loud/sessions/{sid}/traces").json()
    assert traces["source"] == "opentelemetry"
    [run] = traces["runs"]
    spans = run["spans"]
    assert [s["kind"] for s in spans] == ["run", "model", "tool", "model"]
    assert spans[0]["parent"] is None
    assert {s["parent"] for s in spans[1:]} == {spans[0]["id"]}
    assert spans[2]["name"] == "execute_tool shout"
    assert spans[0]["attributes"]["gen_ai.conversation.id"] == sid

    # without tracing, the page draws the spans of the UI's own recorder
    model = ScriptedChatClient(["plain"])
    agent = AgentBuilder().with_name("plain").with_chat_client(model).build()
    host = AgentHost([agent])
    app = create_app(host, ui=ServeUI.attach(host, tracing=False))
    with serve_in_thread(app) as other, httpx.Client(base_url=other, timeout=30) as http:
        sid = http.post("/agents/plain/sessions").json()["id"]
        http.post(f"/agents/plain/sessions/{sid}/runs", json={"messages": "hi"})
        traces = http.get(f"/ui/api/agents/plain/sessions/{sid}/traces").json()
    assert traces["source"] == "recorder"
    assert [s["kind"] for s in traces["runs"][0]["spans"]] == ["run", "model"]


def test_a_workflow_is_started_answered_and_refuses_bad_answers(url: str) -> None:
    with client(url) as http:
        started = http.post("/ui/api/workflows/ask/runs", json={"input": "the letter"})
        assert started.status_code == 201
        run_id = started.json()["id"]
        events = http.get(f"/ui/api/workflow-runs/{run_id}/events").text
        assert "event: end" in events
        state = http.get(f"/ui/api/workflow-runs/{run_id}").json()
        assert state["status"] == "paused"
        [request] = state["pending"]
        assert request["data"] == "ok to send the letter?"
        unknown = http.post(
            f"/ui/api/workflow-runs/{run_id}/answers", json={"responses": {"req_nope": "x"}}
        )
        assert unknown.status_code == 409
        assert unknown.json()["error"]["code"] == "request_not_pending"
        assert http.post(f"/ui/api/workflow-runs/{run_id}/answers", json={}).status_code == 422
        answered = http.post(
            f"/ui/api/workflow-runs/{run_id}/answers",
            json={"responses": {request["request_id"]: "send it"}},
        )
        assert answered.status_code == 201
        resumed = answered.json()["id"]
        tail = http.get(f"/ui/api/workflow-runs/{resumed}/events").text
        assert '"data":"send it"' in tail
        assert http.get(f"/ui/api/workflow-runs/{resumed}").json()["status"] == "completed"
        again = http.post(
            f"/ui/api/workflow-runs/{run_id}/answers",
            json={"responses": {request["request_id"]: "twice"}},
        )
        assert again.status_code == 409
        assert again.json()["error"]["code"] == "not_paused"
        checkpoints = http.get("/ui/api/workflows/ask/checkpoints").json()["checkpoints"]
        assert {c["status"] for c in checkpoints} >= {"paused", "completed"}
        # a paused checkpoint lists its requests and can be answered by its id
        paused = [c for c in checkpoints if c["status"] == "paused"]
        assert paused[0]["requests"][0]["data"] == "ok to send the letter?"
        stale = http.post(
            f"/ui/api/workflows/ask/checkpoints/{paused[0]['id']}/answers",
            json={"responses": {"req_nope": "x"}},
        )
        assert stale.status_code == 409
        # that checkpoint's request was answered above: an answer is taken once
        late = http.post(
            f"/ui/api/workflows/ask/checkpoints/{paused[0]['id']}/answers",
            json={"responses": {paused[0]["requests"][0]["request_id"]: "late"}},
        )
        assert late.status_code == 409  # refused before any run starts
        assert late.json()["error"]["code"] == "answer_claimed"
        assert "was already answered" in late.json()["error"]["message"]
        second = http.post("/ui/api/workflows/ask/runs", json={"input": "the parcel"}).json()
        assert "event: end" in http.get(f"/ui/api/workflow-runs/{second['id']}/events").text
        [fresh] = [
            c
            for c in http.get("/ui/api/workflows/ask/checkpoints").json()["checkpoints"]
            if c["status"] == "paused" and c["requests"][0]["data"] == "ok to send the parcel?"
        ]
        again_run = http.post(
            f"/ui/api/workflows/ask/checkpoints/{fresh['id']}/answers",
            json={"responses": {fresh["requests"][0]["request_id"]: "from the table"}},
        ).json()["id"]
        tail = http.get(f"/ui/api/workflow-runs/{again_run}/events").text
        assert '"data":"from the table"' in tail
        missing = http.post("/ui/api/workflows/ask/checkpoints/cp_nope/resume")
        assert missing.status_code == 404
        assert http.post("/ui/api/workflows/nope/runs", json={}).status_code == 404
    with client(url, TOKEN_B) as other:
        assert other.get(f"/ui/api/workflow-runs/{run_id}").status_code == 404


def test_workflow_checkpoints_belong_to_the_token_that_made_them(url: str) -> None:
    with client(url) as alice:
        run_id = alice.post("/ui/api/workflows/ask/runs", json={"input": "A's letter"}).json()["id"]
        alice.get(f"/ui/api/workflow-runs/{run_id}/events")
        [request] = alice.get(f"/ui/api/workflow-runs/{run_id}").json()["pending"]
        mine = alice.get("/ui/api/workflows/ask/checkpoints").json()["checkpoints"]
    asked = "ok to send A's letter?"
    paused = [c for c in mine if c.get("requests") and c["requests"][0]["data"] == asked]
    assert paused, mine
    checkpoint = paused[0]["id"]
    with client(url, TOKEN_B) as bob:
        listed = bob.get("/ui/api/workflows/ask/checkpoints")
        assert listed.status_code == 200
        assert "A's letter" not in listed.text
        assert checkpoint not in listed.text
        missing = bob.post("/ui/api/workflows/ask/checkpoints/cp_nope/resume")
        for response in (
            bob.post(
                f"/ui/api/workflows/ask/checkpoints/{checkpoint}/answers",
                json={"responses": {request["request_id"]: "sent by B"}},
            ),
            bob.post(f"/ui/api/workflows/ask/checkpoints/{checkpoint}/resume"),
            bob.post(
                f"/ui/api/workflow-runs/{run_id}/answers",
                json={"responses": {request["request_id"]: "sent by B"}},
            ),
        ):
            # the same answer as for a checkpoint that does not exist
            assert response.status_code == 404, response.text
            assert "A's letter" not in response.text
        assert missing.status_code == 404
        assert missing.json()["error"]["code"] == "unknown_checkpoint"
    with client(url) as alice:
        # B's tries left A's run paused; A answers it
        assert alice.get(f"/ui/api/workflow-runs/{run_id}").json()["status"] == "paused"
        answered = alice.post(
            f"/ui/api/workflows/ask/checkpoints/{checkpoint}/answers",
            json={"responses": {request["request_id"]: "sent by A"}},
        )
        assert answered.status_code == 201
        tail = alice.get(f"/ui/api/workflow-runs/{answered.json()['id']}/events").text
        assert '"data":"sent by A"' in tail


def test_raf_ui_refuses_a_python_file_without_agents_or_workflows(tmp_path: Path) -> None:
    empty = tmp_path / "empty.py"
    empty.write_text("x = 1\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "raf.cli", "ui", str(empty), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "defines no Agent or Workflow at module level" in done.stderr
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('boom')\n", encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "raf.cli", "ui", str(broken), "--port", "0"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode != 0
    assert "importing it failed: RuntimeError: boom" in done.stderr


def test_raf_serve_adds_the_pages_only_with_ui(tmp_path: Path) -> None:
    (tmp_path / "helper.yaml").write_text("name: helper\ninstructions: Hi.\n", encoding="utf-8")
    for flags, status in (([], 404), (["--ui"], 200)):
        command = [sys.executable, "-m", "raf.cli", "serve", str(tmp_path), "--port", "0"]
        process = subprocess.Popen(
            [*command, "--sessions", "memory", *flags],
            stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert process.stderr is not None
            line = process.stderr.readline()
            found = re.search(r"^raf serve: helper on (http://\S+) ", line)
            assert found, line
            assert httpx.get(f"{found.group(1)}/ui", timeout=30).status_code == status
        finally:
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=20) == 0
            if process.stderr is not None:
                process.stderr.close()


async def test_the_workflow_host_keeps_the_last_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    from raf.serve.ui import workflows as module

    monkeypatch.setattr(module, "RUNS_KEPT", 2)
    host = module.WorkflowHost([WorkflowBuilder("ask", start=Ask("asker")).build()])
    ids = []
    for text in ("a", "b", "c"):
        record = host.start("ask", "me", input=text)
        assert record.task is not None
        await record.task
        assert record.status == "paused"
        ids.append(record.id)
    assert list(host.runs) == ids[1:]
    from raf.serve.errors import ServeError

    with pytest.raises(ServeError, match=rf"^no workflow run named {ids[0]!r}$") as gone:
        host.run(ids[0], "me")
    assert gone.value.status == 404 and gone.value.code == "unknown_workflow run"


def test_a_typed_value_with_a_lone_surrogate_escape_stays_text() -> None:
    from raf.serve.ui.workflows import parse_value

    assert parse_value('{"a": [1, "\\u00e9"]}') == {"a": [1, "é"]}
    assert parse_value('"\\ud83d\\ude00"') == "\U0001f600"  # a pair is one character
    assert parse_value('"\\ud800"') == '"\\ud800"'  # alone it could not be written back
    assert parse_value("plain words") == "plain words"
