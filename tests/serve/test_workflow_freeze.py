"""A served workflow document that loops on a pattern which backtracks for long keeps the
server answering, and its run ends at the document's time limit with an error that names
the limit; the UI's background runs go through the same budgeted runtime."""

from __future__ import annotations

import asyncio
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from raf.cli._agents import build_agent
from raf.decl.workflow import DeclWorkflowBuilder
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.serve.ui.workflows import WorkflowHost

LOOPER = """
kind: Workflow
name: looper
maxSeconds: 3
actions:
  - {kind: SetVariable, id: start, variable: Local.tries, value: 0}
  - kind: RepeatUntil
    id: spin
    condition: '=IsMatch(System.LastMessage.Text, "(a|aa)+$") || Local.tries > 5000'
    actions:
      - {kind: SetVariable, id: count, variable: Local.tries, value: =Local.tries + 1}
  - {kind: SendActivity, id: done, activity: "done after {Local.tries}"}
"""

SLOW_INPUT = "a" * 26 + "b"
"""27 characters that `(a|aa)+$` fails to match only after tens of milliseconds."""


def test_a_looping_workflow_leaves_the_server_answering_and_ends_at_its_time_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAF_DATA_DIR", str(tmp_path / "data"))
    document = tmp_path / "looper.yaml"
    document.write_text(LOOPER, encoding="utf-8")
    app = create_app(AgentHost([build_agent(str(document), None, None)]), a2a=False)
    with (
        serve_in_thread(app) as url,
        httpx.Client(base_url=url, timeout=30) as client,
        ThreadPoolExecutor(max_workers=1) as background,
    ):
        session = client.post("/agents/looper/sessions").json()["id"]
        started = time.monotonic()
        run = background.submit(
            client.post,
            f"/agents/looper/sessions/{session}/runs",
            json={"messages": SLOW_INPUT},
        )
        time.sleep(0.5)  # the run is looping by now
        waits: list[float] = []
        while not run.done() and len(waits) < 5:
            asked = time.monotonic()
            health = client.get("/health", timeout=10)
            waits.append(time.monotonic() - asked)
            assert health.status_code == 200
            time.sleep(0.2)
        assert len(waits) >= 3, "the run ended before the server was asked"
        assert max(waits) < 1.0, f"/health took {max(waits):.2f} s while the workflow looped"
        answer = run.result(timeout=30)
        took = time.monotonic() - started
    assert answer.status_code >= 400, answer.text
    error = answer.text
    assert "ran for more than 3 seconds" in error
    assert "maxSeconds" in error and "'spin'" in error
    assert took < 10, f"the run took {took:.1f} s for a 3 s limit"


async def test_a_workflow_the_ui_runs_ends_at_its_time_limit_while_the_loop_stays_free() -> None:
    workflow = (
        DeclWorkflowBuilder().from_yaml_str(LOOPER.replace("maxSeconds: 3", "maxSeconds: 1.5"))
    ).build()
    host = WorkflowHost([workflow])
    ticks: list[float] = []

    async def tick() -> None:
        last = time.monotonic()
        while True:
            await asyncio.sleep(0.01)
            now = time.monotonic()
            ticks.append(now - last)
            last = now

    ticker = asyncio.ensure_future(tick())
    try:
        record = host.start("looper", "owner", input=SLOW_INPUT)
        assert record.task is not None
        await asyncio.wait_for(record.task, timeout=20)
    finally:
        ticker.cancel()
    assert record.status == "failed"
    failed = [e for e in record.events if e["type"] in ("WorkflowFailed", "ExecutorFailed")]
    assert failed and "ran for more than 1.5 seconds" in str(failed[-1])
    assert len(ticks) > 50 and max(ticks) < 0.5, f"the loop was held {max(ticks):.2f} s"
