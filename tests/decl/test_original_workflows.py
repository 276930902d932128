"""The original framework's `kind: workflow` documents run in raf: `raf run` runs one that
needs no model and exits 0; its HttpRequestAction's body kinds and query parameters reach
a loopback server as the original sends them; a GotoAction may name an InvokeAgent by its
agent; a loop control outside a loop is dropped with a warning, as the original ignores
it."""

from __future__ import annotations

import http.server
import json
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from raf import AgentBuilder
from raf.core.errors import ValidationProblems
from raf.decl.workflow import DeclWorkflowBuilder, load_workflow
from raf.testing import ScriptedChatClient
from tests.decl.workflow.helpers import variables

ORIGINAL = Path(__file__).parent / "original"


def test_raf_run_runs_the_originals_workflow() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "raf.cli", "run", str(ORIGINAL / "workflow_runs.yaml"), "go"],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    # Foreach's item_name, ConditionGroup's else_actions, EditTableV2's delete, ExecuteCode's
    # output mapping (result: the run's record; messages: what it printed)
    assert "Books of Corner shop: 12 (small), code said 42" in done.stdout
    assert "printed 42, rows 1" in done.stdout


@contextmanager
def recording_server() -> Iterator[tuple[str, list[dict[str, Any]]]]:
    seen: list[dict[str, Any]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        timeout = 10

        def _answer(self) -> None:
            size = int(self.headers.get("Content-Length") or 0)
            seen.append(
                {
                    "method": self.command,
                    "path": self.path,
                    "body": self.rfile.read(size).decode(),
                    "type": self.headers.get("Content-Type"),
                }
            )
            body = json.dumps({"ok": True}).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("X-Desk", "seen")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = _answer

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}", seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


HTTP_WORKFLOW = """
kind: workflow
name: original-http
trigger:
  kind: OnConversationStart
  id: http
  actions:
    - kind: HttpRequestAction
      url: {url}/tickets
      method: POST
      query_parameters:
        source: desk
        page: 2
      body:
        kind: json
        value:
          ticket: T-1
      response: Local.posted
      response_headers: Local.posted_headers
    - kind: HttpRequestAction
      url: {url}/notes?lang=en
      method: PUT
      query_parameters:
        draft: true
      body:
        kind: raw
        value: plain words
    - kind: HttpRequestAction
      url: {url}/status
      body:
        kind: none
"""


async def test_the_originals_http_body_kinds_and_query_parameters_are_sent() -> None:
    with recording_server() as (url, seen):
        workflow = DeclWorkflowBuilder().from_yaml_str(HTTP_WORKFLOW.format(url=url)).build()
        result = await workflow.run("go")
    assert result.status == "completed"
    posted, put, got = seen
    assert (posted["method"], posted["path"]) == ("POST", "/tickets?source=desk&page=2")
    assert json.loads(posted["body"]) == {"ticket": "T-1"}
    assert posted["type"] == "application/json"
    assert (put["method"], put["path"], put["body"]) == (
        "PUT",
        "/notes?lang=en&draft=true",
        "plain words",
    )
    assert (got["method"], got["path"], got["body"]) == ("GET", "/status", "")
    local = variables(workflow)["Local"]
    assert local["posted"] == {"ok": True}
    assert local["posted_headers"]["X-Desk"] == "seen"


def test_computed_query_parameters_are_a_located_warning() -> None:
    text = HTTP_WORKFLOW.format(url="http://127.0.0.1:9").replace(
        "source: desk", "source: =Local.source"
    )
    loaded = load_workflow(text, file="http.yaml")
    (warning,) = [w for w in loaded.warnings if "query" in w.message]
    assert warning.key_path == "trigger.actions[0].queryParameters"
    assert (warning.file, warning.line) == ("http.yaml", 11)
    assert "build the URL with an expression" in warning.message


def test_the_originals_spelling_keeps_raf_problems_located() -> None:
    text = """
kind: workflow
name: original-wrong
trigger:
  kind: OnConversationStart
  id: wrong
  actions:
    - kind: Foreach
      source: =[1, 2]
      item_name: n
      actions:
        - kind: SetVariable
          variable: Local.x
          value: =m + 1
"""
    with pytest.raises(ValidationProblems) as caught:
        load_workflow(text, file="wrong.yaml")
    (problem,) = caught.value.problems
    assert problem.line == 14 and "unknown variable scope 'm'" in problem.message


def test_a_callers_mapping_is_not_changed() -> None:
    data: dict[str, Any] = {
        "kind": "workflow",
        "name": "original-dict",
        "trigger": {
            "kind": "OnConversationStart",
            "id": "d",
            "actions": [{"kind": "Foreach", "source": "=[1]", "item_name": "n", "actions": []}],
        },
    }
    DeclWorkflowBuilder().from_dict(data).build()
    assert "item_name" in data["trigger"]["actions"][0]


GOTO_AGENT = """
kind: workflow
name: original-goto
trigger:
  kind: OnConversationStart
  id: again
  actions:
    - kind: SetVariable
      variable: Local.rounds
      value: 0
    - kind: InvokeAgent
      agent:
        name: writer
      output:
        messages: Local.said
    - kind: SetVariable
      variable: Local.rounds
      value: =Local.rounds + 1
    - kind: If
      condition: =Local.rounds < 2
      then:
        - kind: GotoAction
          actionId: writer
    - kind: ContinueLoop
    - kind: SendActivity
      activity:
        text: '{Local.rounds} rounds'
"""


async def test_goto_names_an_invoke_agent_by_its_agent_and_stray_loop_controls_are_dropped() -> (
    None
):
    loaded = load_workflow(GOTO_AGENT, file="goto.yaml")
    (warning,) = [w for w in loaded.warnings if "outside a Foreach" in w.message]
    assert (warning.key_path, warning.line) == ("trigger.actions[4]", 24)
    model = ScriptedChatClient(["first", "second"])
    writer = AgentBuilder("writer").with_chat_client(model).build()
    workflow = DeclWorkflowBuilder().from_loaded(loaded).with_agent("writer", writer).build()
    result = await workflow.run("go")
    assert result.status == "completed"
    assert len(model.requests) == 2  # the GotoAction went back to the InvokeAgent once
    assert result.outputs[-1] == "2 rounds"
