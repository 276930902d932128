"""Nothing a client sends runs unbounded on the event loop: while the worst input of each
kind is being answered (a huge `response_format` / `text.format` schema, a schema whose
`pattern` backtracks on the model's answer, a long answer to a workflow Question read as
an age), `/health` on the same real server keeps answering within a second."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

APP = "tests.serve.loop_app"
"""Run as a module from the root, so that its folder (holding `a2a/`, `mcp/` and `openai/`
test packages) does not shadow the SDKs of those names."""
ROOT = Path(__file__).resolve().parents[2]

HEALTH_BOUND = 1.0
"""Seconds `/health` may take while a hostile request is answered."""

HUGE_SCHEMA = {"type": "object", "allOf": [{}] * 80_000}
"""240 KiB of empty subschemas: checking them against the metaschema took half a minute
on the event loop."""

LARGEST_SCHEMA = {"type": "object", "allOf": [{}] * 4_999}
"""The most subschemas a schema may have (with its root): about a second of checking,
done on a worker."""

BACKTRACKING = {
    "type": "object",
    "properties": {"x": {"type": "string", "pattern": "^(a|aa)+$"}},
    "required": ["x"],
}
"""Matched against the model's answer to `slow` (see loop_app.py)."""


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    """The server of loop_app.py, in a process of its own (the work that held the loop
    also held the interpreter: a server in this process would stop the probes too)."""
    given = [os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []
    path = os.pathsep.join([*given, str(ROOT), str(ROOT / "src")])
    process = subprocess.Popen(
        [sys.executable, "-m", APP],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": path},
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("port "):
            process.kill()
            raise AssertionError(f"the server did not start: {line!r}\n{process.communicate()[1]}")
        yield f"http://127.0.0.1:{line.split()[1]}"
    finally:
        process.send_signal(signal.SIGINT)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


def health_while(url: str, send: Callable[[], httpx.Response]) -> tuple[httpx.Response, float]:
    """`send()` on another thread; `/health` asked meanwhile (at least once): the answer
    and the longest `/health` took."""
    waits: list[float] = []
    with (
        ThreadPoolExecutor(max_workers=1) as background,
        httpx.Client(base_url=url, timeout=60) as probe,
    ):
        running: Future[httpx.Response] = background.submit(send)
        time.sleep(0.2)  # the request is being answered by now
        while True:
            asked = time.monotonic()
            assert probe.get("/health").status_code == 200
            waits.append(time.monotonic() - asked)
            if running.done():
                break
            time.sleep(0.1)
        return running.result(timeout=120), max(waits)


def post(url: str, path: str, body: dict[str, Any]) -> Callable[[], httpx.Response]:
    def send() -> httpx.Response:
        return httpx.post(f"{url}{path}", json=body, timeout=120)

    return send


def chat(schema: dict[str, Any], said: str = "hi") -> dict[str, Any]:
    return {
        "model": "helper",
        "messages": [{"role": "user", "content": said}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "x", "schema": schema}},
    }


def responses(schema: dict[str, Any], said: str = "hi") -> dict[str, Any]:
    return {
        "model": "helper",
        "input": said,
        "store": False,
        "text": {"format": {"type": "json_schema", "name": "x", "schema": schema}},
    }


SURFACES = [
    pytest.param("/v1/chat/completions", chat, "response_format.json_schema.schema", id="chat"),
    pytest.param("/v1/responses", responses, "text.format.schema", id="responses"),
]


@pytest.mark.parametrize(("path", "body", "param"), SURFACES)
def test_a_huge_schema_is_refused_naming_its_limit_while_the_server_answers(
    url: str,
    path: str,
    body: Callable[..., dict[str, Any]],
    param: str,
) -> None:
    answer, slowest = health_while(url, post(url, path, body(HUGE_SCHEMA)))
    assert slowest < HEALTH_BOUND, f"/health took {slowest:.2f} s"
    assert answer.status_code == 400, answer.text
    error = answer.json()["error"]
    assert error["param"] == param
    assert "more than 5,000 subschemas" in error["message"]


@pytest.mark.parametrize(("path", "body", "param"), SURFACES)
def test_the_largest_schema_allowed_is_checked_off_the_event_loop(
    url: str,
    path: str,
    body: Callable[..., dict[str, Any]],
    param: str,
) -> None:
    answer, slowest = health_while(url, post(url, path, body(LARGEST_SCHEMA)))
    assert slowest < HEALTH_BOUND, f"/health took {slowest:.2f} s"
    assert answer.status_code == 200, answer.text
    assert "fine" in answer.text


@pytest.mark.parametrize(("path", "body", "param"), SURFACES)
def test_a_backtracking_pattern_is_stopped_and_the_run_is_a_502_with_the_reason(
    url: str,
    path: str,
    body: Callable[..., dict[str, Any]],
    param: str,
) -> None:
    answer, slowest = health_while(url, post(url, path, body(BACKTRACKING, "slow")))
    assert slowest < HEALTH_BOUND, f"/health took {slowest:.2f} s"
    assert answer.status_code == 502, answer.text
    error = answer.json()["error"]
    assert error["code"] is None  # OpenAI's shape: raf's own code starts the message
    assert error["message"].startswith("invalid_model_output: ")
    assert "after 2 attempt(s)" in error["message"]
    assert "took longer than 1 s and was stopped" in error["message"]


LONG_ANSWER = "1" + " " * 30_000 + "x"
"""Read with `\\s*` twice around the unit, this took many seconds (58 KiB took 42 s)."""


def test_a_long_answer_to_an_age_question_in_the_ui_leaves_the_server_answering(
    url: str,
) -> None:
    with httpx.Client(base_url=url, timeout=60) as http:
        run_id = http.post("/ui/api/workflows/ask_age/runs", json={"input": "go"}).json()["id"]
        assert "event: end" in http.get(f"/ui/api/workflow-runs/{run_id}/events").text
        [request] = http.get(f"/ui/api/workflow-runs/{run_id}").json()["pending"]
        # the resumed run reads the answer as soon as it is taken, or while its events
        # are waited for: `/health` is asked during both
        answered, slowest = health_while(
            url,
            post(
                url,
                f"/ui/api/workflow-runs/{run_id}/answers",
                {"responses": {request["request_id"]: LONG_ANSWER}},
            ),
        )
        assert answered.status_code == 201, answered.text
        resumed = answered.json()["id"]
        events, later = health_while(
            url,
            lambda: httpx.get(f"{url}/ui/api/workflow-runs/{resumed}/events", timeout=120),
        )
        slowest = max(slowest, later)
    assert slowest < HEALTH_BOUND, f"/health took {slowest:.2f} s"
    assert "age 30" in events.text  # not an age: the default is taken
