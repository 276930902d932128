"""Several server processes on one store behave as one service: an approval answered
through two or three of them at the same moment runs its call once, a workflow's question
answered the same way runs its node once, a late answer runs nothing and gets a clear
conflict, and a worker killed mid-run frees its session once its lease lapses.

The workers are real processes (tests/serve/fleet_app.py) on real SQLite and PostgreSQL.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.servers import Server

APP = "tests.serve.fleet_app"
"""Run as a module from the root, so that its folder (holding `a2a/`, `mcp/` and `openai/`
test packages) does not shadow the SDKs of those names."""
ROOT = Path(__file__).resolve().parents[2]
TRIALS = 100
REFUSALS = {"session_busy", "approval_not_pending", "approval_refused"}
"""How a losing answer is told: another worker holds the session, the call was answered
by then, or (without leases) another run claimed the approval first."""


@dataclass
class Fleet:
    """Worker processes serving one store, and the folder where their tools leave marks.

    Each worker has two clients kept open for the whole fleet: `clients` for requests
    sent one at a time, `racers` for the threads of `at_once`. A new `httpx.Client`
    builds an SSL context (about 20 ms), which the trials' thousand-odd requests would
    otherwise pay each, several times what the workers take to answer."""

    folder: Path
    processes: list[subprocess.Popen[str]] = field(default_factory=list)
    urls: list[str] = field(default_factory=list)
    clients: list[httpx.Client] = field(default_factory=list)
    racers: list[httpx.Client] = field(default_factory=list)

    def launch(self, store: str, *flags: str) -> subprocess.Popen[str]:
        process = subprocess.Popen(
            [sys.executable, "-m", APP, store, str(self.folder), *flags],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=ROOT,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        self.processes.append(process)
        return process

    def started(self, process: subprocess.Popen[str]) -> None:
        """Wait for a launched worker to say its port."""
        assert process.stdout is not None
        line = process.stdout.readline().strip()
        if not line.startswith("port "):
            process.kill()
            raise AssertionError(f"a worker did not start: {line!r}\n{process.communicate()[1]}")
        url = f"http://127.0.0.1:{line.split()[1]}"
        self.urls.append(url)
        self.clients.append(httpx.Client(base_url=url, timeout=60))
        self.racers.append(httpx.Client(base_url=url, timeout=60))

    def stop(self) -> None:
        for client in [*self.clients, *self.racers]:
            client.close()
        for process in self.processes:
            if process.poll() is None:
                process.send_signal(signal.SIGINT)
        for process in self.processes:
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=10)

    def marks(self, name: str, text: str) -> list[str]:
        """The lines of FOLDER/`name` that end with `text`."""
        path = self.folder / name
        lines = path.read_text(encoding="utf-8").splitlines() if path.exists() else []
        return [line for line in lines if line.split(" ", 1)[-1] == text]


def start_fleet(store: str, folder: Path, count: int, *flags: str) -> Fleet:
    """`count` workers on `store`, launched together (each takes about a second to
    import and open the store) and listed in the order they were launched."""
    fleet = Fleet(folder=folder)
    try:
        launched = [fleet.launch(store, *flags) for _ in range(count)]
        for process in launched:
            fleet.started(process)
    except BaseException:
        fleet.stop()
        raise
    return fleet


def fresh_database(server: Server, name: str) -> str:
    """A new database on the test server, so each fleet starts with empty tables."""
    import psycopg

    with psycopg.connect(server.url, autocommit=True) as conn:
        conn.execute(f"CREATE DATABASE {name}")
    return server.url.rsplit("/", 1)[0] + f"/{name}"


@pytest.fixture(scope="module")
def sqlite_fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    folder = tmp_path_factory.mktemp("fleet-sqlite")
    fleet = start_fleet(str(folder / "sessions.sqlite"), folder, 3)
    yield fleet
    fleet.stop()


@pytest.fixture(scope="module")
def postgres_fleet(
    tmp_path_factory: pytest.TempPathFactory, postgres_server: Server
) -> Iterator[Fleet]:
    folder = tmp_path_factory.mktemp("fleet-postgres")
    fleet = start_fleet(fresh_database(postgres_server, "fleet"), folder, 3)
    yield fleet
    fleet.stop()


def at_once(
    requests: list[tuple[httpx.Client | str, str, dict[str, Any]]],
) -> list[httpx.Response]:
    """Send each (client or base URL, path, body) from its own thread on a connection
    opened beforehand, released together, so that the requests reach their servers at
    the same moment. A URL gets a client of its own for this race, closed after it."""
    opened = [httpx.Client(base_url=c, timeout=60) for c, _, _ in requests if isinstance(c, str)]
    made = iter(opened)
    clients = [c if isinstance(c, httpx.Client) else next(made) for c, _, _ in requests]
    try:
        for client in clients:
            client.get("/health")  # the connection is open before the race starts
        start = threading.Barrier(len(requests))
        answers: list[httpx.Response | None] = [None] * len(requests)

        def send(index: int) -> None:
            _, path, body = requests[index]
            start.wait(timeout=30)
            answers[index] = clients[index].post(path, json=body)

        threads = [threading.Thread(target=send, args=(i,)) for i in range(len(requests))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=90)
    finally:
        for client in opened:
            client.close()
    assert all(a is not None for a in answers), "an answer did not come back"
    return [a for a in answers if a is not None]


def paused_run(client: httpx.Client, agent: str, text: str) -> tuple[str, str]:
    """Start a run that pauses for a human; its session id and the call waiting."""
    got = client.post(f"/agents/{agent}/runs", json={"messages": text})
    assert got.status_code == 200, got.text
    body = got.json()
    (pending,) = body["pending_approvals"]
    return body["session_id"], pending["call_id"]


def answer_everywhere(
    fleet: Fleet, workers: int, agent: str, session_id: str, call_id: str
) -> list[httpx.Response]:
    path = f"/agents/{agent}/sessions/{session_id}/approvals"
    body = {"responses": [{"call_id": call_id, "approved": True}]}
    return at_once([(racer, path, body) for racer in fleet.racers[:workers]])


def check_one_won(answers: list[httpx.Response]) -> None:
    statuses = sorted(a.status_code for a in answers)
    assert statuses == [200] + [409] * (len(answers) - 1), [a.text for a in answers]
    for lost in (a for a in answers if a.status_code == 409):
        assert lost.json()["error"]["code"] in REFUSALS, lost.text


def check_late_answer_refused(
    fleet: Fleet, agent: str, session_id: str, call_id: str, trial: int
) -> None:
    late = fleet.clients[trial % len(fleet.clients)].post(
        f"/agents/{agent}/sessions/{session_id}/approvals",
        json={"responses": [{"call_id": call_id, "approved": True}]},
    )
    assert late.status_code == 409, late.text
    assert late.json()["error"]["code"] == "approval_not_pending", late.text


def run_approval_trials(fleet: Fleet, workers: int, label: str) -> None:
    for trial in range(TRIALS):
        note = f"{label}-{trial}"
        session_id, call_id = paused_run(fleet.clients[trial % workers], "clerk", note)
        check_one_won(answer_everywhere(fleet, workers, "clerk", session_id, call_id))
        assert len(fleet.marks("ran.txt", note)) == 1, f"trial {trial}: the tool ran again"
        check_late_answer_refused(fleet, "clerk", session_id, call_id, trial)
        stored = fleet.clients[0].get(f"/agents/clerk/sessions/{session_id}")
        results = [
            c
            for m in stored.json()["messages"]
            for c in m["contents"]
            if c["type"] == "function_result"
        ]
        assert len(results) == 1 and stored.json()["approvals"] == [], stored.text
    assert len(fleet.marks("ran.txt", f"{label}-{TRIALS - 1}")) == 1


def run_checkpoint_trials(fleet: Fleet, workers: int, label: str) -> None:
    for trial in range(TRIALS):
        draft = f"{label}-{trial}"
        session_id, request_id = paused_run(fleet.clients[trial % workers], "publisher", draft)
        check_one_won(answer_everywhere(fleet, workers, "publisher", session_id, request_id))
        assert len(fleet.marks("node.txt", draft)) == 1, f"trial {trial}: the node ran again"
        check_late_answer_refused(fleet, "publisher", session_id, request_id, trial)


def test_an_approval_answered_through_two_sqlite_workers_runs_its_call_once(
    sqlite_fleet: Fleet,
) -> None:
    run_approval_trials(sqlite_fleet, 2, "sqlite-approval-2")


def test_an_approval_answered_through_three_postgres_workers_runs_its_call_once(
    postgres_fleet: Fleet,
) -> None:
    run_approval_trials(postgres_fleet, 3, "postgres-approval-3")


def test_a_workflow_question_answered_through_three_sqlite_workers_runs_its_node_once(
    sqlite_fleet: Fleet,
) -> None:
    run_checkpoint_trials(sqlite_fleet, 3, "sqlite-checkpoint-3")


def test_a_workflow_question_answered_through_two_postgres_workers_runs_its_node_once(
    postgres_fleet: Fleet,
) -> None:
    run_checkpoint_trials(postgres_fleet, 2, "postgres-checkpoint-2")


def test_without_leases_the_approval_claim_alone_runs_a_call_once(tmp_path: Path) -> None:
    fleet = start_fleet(str(tmp_path / "sessions.sqlite"), tmp_path, 2, "--no-leases")
    try:
        for trial in range(30):
            note = f"claim-only-{trial}"
            session_id, call_id = paused_run(fleet.clients[trial % 2], "clerk", note)
            answers = answer_everywhere(fleet, 2, "clerk", session_id, call_id)
            check_one_won(answers)
            assert len(fleet.marks("ran.txt", note)) == 1, f"trial {trial}: the tool ran again"
    finally:
        fleet.stop()


def test_a_killed_worker_frees_its_session_after_the_lease_and_nothing_is_half_written(
    tmp_path: Path,
) -> None:
    fleet = start_fleet(str(tmp_path / "sessions.sqlite"), tmp_path, 2, "--lease-seconds", "1.5")
    try:
        first, second = fleet.urls
        session_id, call_id = paused_run(fleet.clients[0], "clerk", "before")
        answered = httpx.post(
            f"{first}/agents/clerk/sessions/{session_id}/approvals",
            json={"responses": [{"call_id": call_id, "approved": True}]},
            timeout=60,
        )
        assert answered.status_code == 200, answered.text
        before = httpx.get(f"{second}/agents/clerk/sessions/{session_id}", timeout=60).json()

        def held_run() -> None:
            with contextlib.suppress(httpx.HTTPError):  # its worker is killed mid-run
                httpx.post(
                    f"{first}/agents/clerk/sessions/{session_id}/runs",
                    json={"messages": "hold 60"},
                    timeout=90,
                )

        runner = threading.Thread(target=held_run)
        runner.start()
        deadline = time.monotonic() + 30
        while not (tmp_path / "holding.txt").exists():
            assert time.monotonic() < deadline, "the held run did not start"
            time.sleep(0.02)
        busy = httpx.post(
            f"{second}/agents/clerk/sessions/{session_id}/runs",
            json={"messages": "after"},
            timeout=60,
        )
        assert busy.status_code == 409 and busy.json()["error"]["code"] == "session_busy"
        os.kill(fleet.processes[0].pid, signal.SIGKILL)
        fleet.processes[0].wait(timeout=10)
        runner.join(timeout=30)
        deadline = time.monotonic() + 10
        while True:  # free again within the lease (1.5 s) and the polling
            after = httpx.post(
                f"{second}/agents/clerk/sessions/{session_id}/runs",
                json={"messages": "after"},
                timeout=60,
            )
            if after.status_code != 409:
                break
            assert after.json()["error"]["code"] == "session_busy", after.text
            assert time.monotonic() < deadline, "the session stayed locked"
            time.sleep(0.1)
        assert after.status_code == 200, after.text
        assert [p["name"] for p in after.json()["pending_approvals"]] == ["record"]
        now = httpx.get(f"{second}/agents/clerk/sessions/{session_id}", timeout=60).json()
        # the killed run saved nothing: the session is what it was, plus the new turn
        assert now["messages"][: len(before["messages"])] == before["messages"]
        assert "hold 60" not in json.dumps(now["messages"])
    finally:
        fleet.stop()


def test_a_cancel_sent_to_another_worker_stops_the_run(sqlite_fleet: Fleet) -> None:
    first, second = sqlite_fleet.urls[:2]
    made = httpx.post(f"{first}/agents/clerk/sessions", json={}, timeout=60).json()
    session_id = made["id"]
    outcome: list[httpx.Response] = []

    def held_run() -> None:
        outcome.append(
            httpx.post(
                f"{first}/agents/clerk/sessions/{session_id}/runs",
                json={"messages": "hold 60"},
                timeout=90,
            )
        )

    runner = threading.Thread(target=held_run)
    started = time.monotonic()
    runner.start()
    deadline = started + 30
    while True:  # the run holds the session once its tool is running
        seen = httpx.get(f"{second}/agents/clerk/sessions/{session_id}", timeout=60).json()
        if seen["running"]:
            break
        assert time.monotonic() < deadline, "the held run did not start"
        time.sleep(0.05)
    assert seen["run_id"]
    cancelled = httpx.post(
        f"{second}/agents/clerk/sessions/{session_id}/cancel", json={}, timeout=60
    )
    assert cancelled.status_code == 202, cancelled.text
    assert cancelled.json()["run_id"] == seen["run_id"]
    runner.join(timeout=30)
    assert outcome and outcome[0].status_code == 200, outcome
    assert outcome[0].json()["finish_reason"] == "cancelled"
    assert time.monotonic() - started < 30  # not the tool's 60 s
    again = httpx.post(f"{second}/agents/clerk/sessions/{session_id}/cancel", json={}, timeout=60)
    assert again.status_code == 409 and again.json()["error"]["code"] == "no_run_in_progress"


async def test_an_a2a_task_made_by_one_worker_is_continued_and_read_through_others(
    sqlite_fleet: Fleet,
) -> None:
    from a2a.client import ClientConfig, create_client
    from a2a.helpers import new_data_part, new_text_message
    from a2a.types import GetTaskRequest, Role, SendMessageRequest, TaskState

    async def send(url: str, message: Any) -> Any:
        async with httpx.AsyncClient(timeout=60) as http:
            client = await create_client(
                f"{url}/a2a/clerk", client_config=ClientConfig(httpx_client=http, streaming=False)
            )
            events = [e async for e in client.send_message(SendMessageRequest(message=message))]
        tasks = [e.task for e in events if e.HasField("task")]
        assert tasks, events
        return tasks[-1]

    first, second, third = sqlite_fleet.urls
    paused = await send(first, new_text_message("a2a-note", role=Role.ROLE_USER))
    assert paused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED, paused
    answer = new_text_message("", role=Role.ROLE_USER, context_id=paused.context_id)
    answer.task_id = paused.id
    del answer.parts[:]
    answer.parts.append(new_data_part({"approvals": [{"call_id": "c-a2a-note", "approved": True}]}))
    done = await send(second, answer)  # another worker continues the task
    assert done.id == paused.id
    assert done.status.state == TaskState.TASK_STATE_COMPLETED, done
    assert len(sqlite_fleet.marks("ran.txt", "a2a-note")) == 1
    async with httpx.AsyncClient(timeout=60) as http:
        client = await create_client(
            f"{third}/a2a/clerk", client_config=ClientConfig(httpx_client=http, streaming=False)
        )
        read = await client.get_task(GetTaskRequest(id=paused.id))
    assert read.status.state == TaskState.TASK_STATE_COMPLETED


def test_a_response_made_by_one_worker_is_continued_and_read_through_others(
    sqlite_fleet: Fleet,
) -> None:
    """The Responses API's ids live in the shared store: a conversation goes on through
    any worker, with the history the first one kept."""
    import openai

    def sdk(url: str) -> openai.OpenAI:
        return openai.OpenAI(base_url=f"{url}/v1", api_key="unused", max_retries=0, timeout=60)

    first, second, third = sqlite_fleet.urls
    made = sdk(first).responses.create(model="echo", input="I am Ada.")
    assert made.output_text == "I am Ada."
    went_on = sdk(second).responses.create(
        model="echo", input="Who am I?", previous_response_id=made.id
    )
    assert went_on.output_text == "I am Ada. | Who am I?"  # the second worker had the history
    assert sdk(third).responses.retrieve(made.id).output_text == "I am Ada."
    with sdk(third).responses.stream(
        model="echo", input="And now?", previous_response_id=went_on.id
    ) as stream:
        final = stream.get_final_response()
    assert final.output_text == "I am Ada. | Who am I? | And now?"
    assert sdk(first).responses.retrieve(final.id).previous_response_id == went_on.id
