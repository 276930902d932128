"""Runs as resources and double texting across a fleet: three real `raf serve` processes
on one SQLite file and on one PostgreSQL database, a scripted model slow enough that two
runs of one session overlap.

Per strategy, trials of two messages to one session through two workers: `reject` gives
one 409 and stores one turn; `enqueue` stores both turns once each in arrival order;
`interrupt` stops the first run (its turn kept, repaired) and answers the second;
`rollback` keeps only the second turn. A run outlives the client that started it: its
events read back after re-attaching with `Last-Event-ID` on another worker equal an
uninterrupted stream's. A webhook on loopback (allowed by a flag) is called once per
run, signed, and retried after a 500.

`RAF_RUN_TRIALS=30` runs 30 trials per strategy and store instead of 5.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest

from raf.serve.webhooks import verify
from tests.serve.test_fleet import at_once, fresh_database
from tests.servers import Server

pytestmark = pytest.mark.slow

TRIALS = int(os.environ.get("RAF_RUN_TRIALS", "5"))
SECRET = "fleet-webhook-secret"
AGENT = "name: talker\ninstructions: You talk slowly.\n"
WORDS = "one two three four five six seven eight nine ten"
"""Each answer: after half a second, streamed two characters at a time, 0.05 s apart.

Long enough for what the tests need and no longer: two requests released together by
`at_once` reach their workers within milliseconds of each other, far inside the half
second; a streamed answer (background runs) takes 1.7 s, past the lease's first renewal
(1 s in: a third of `--lease-seconds 3`), which is when a worker holding a run reads the
stop that `interrupt` or `rollback` asked of it through the store."""


@dataclass
class Fleet:
    """`raf serve` processes sharing one store, with a client kept open to each (a new
    `httpx.Client` builds an SSL context, about 20 ms, more than most requests here)."""

    urls: list[str] = field(default_factory=list)
    processes: list[subprocess.Popen[str]] = field(default_factory=list)
    clients: list[httpx.Client] = field(default_factory=list)

    def stop(self) -> None:
        for client in self.clients:
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


def start_fleet(folder: Path, sessions: str, count: int = 3) -> Fleet:
    (folder / "talker.yaml").write_text(AGENT, encoding="utf-8")
    replies = [{"text": WORDS, "delay": 0.5, "pace": 0.05} for _ in range(400)]
    script = folder / "script.json"
    script.write_text(json.dumps({"replies": replies, "chunkSize": 2}), encoding="utf-8")
    env = {**os.environ, "RAF_DATA_DIR": str(folder / "data"), "RAF_WEBHOOK_SECRET": SECRET}
    env.pop("RAF_MODEL", None)
    fleet = Fleet()
    try:
        for _ in range(count):  # launched together: each takes about a second to start
            process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "raf.cli",
                    "serve",
                    str(folder / "talker.yaml"),
                    "--port",
                    "0",
                    "--model",
                    f"scripted:{script}",
                    "--sessions",
                    sessions,
                    "--lease-seconds",
                    "3",
                    "--loopback-rate-limit",
                    "0",
                    "--webhook-allow-private",
                ],
                cwd=folder,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
            )
            fleet.processes.append(process)
        for process in fleet.processes:
            assert process.stderr is not None
            line = process.stderr.readline()
            found = re.search(r"on (http://\S+) \(auth", line)
            assert found, line + process.stderr.read()
            fleet.urls.append(found.group(1))
            fleet.clients.append(httpx.Client(base_url=found.group(1), timeout=60))
    except BaseException:
        fleet.stop()
        raise
    return fleet


@pytest.fixture(scope="module", params=["sqlite", "postgres"])
def fleet(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    folder = tmp_path_factory.mktemp(f"runs-{request.param}")
    if request.param == "sqlite":
        sessions = str(folder / "sessions.sqlite")
    else:
        server: Server = request.getfixturevalue("postgres_server")
        sessions = fresh_database(server, f"runs_{os.getpid()}")
    started = start_fleet(folder, sessions)
    yield started
    started.stop()


def new_session(client: httpx.Client) -> str:
    answer = client.post("/agents/talker/sessions")
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def user_texts(client: httpx.Client, sid: str) -> list[str]:
    session = client.get(f"/agents/talker/sessions/{sid}").json()
    return [
        "".join(c.get("text", "") for c in m["contents"])
        for m in session["messages"]
        if m["role"] == "user"
    ]


def wait_for(
    client: httpx.Client, run_id: str, states: set[str], timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        run: dict[str, Any] = client.get(f"/agents/talker/runs/{run_id}").json()
        if run["state"] in states or time.monotonic() > deadline:
            return run
        time.sleep(0.05)


def runs_path(sid: str) -> str:
    return f"/agents/talker/sessions/{sid}/runs"


def test_reject_refuses_the_second_message_and_stores_one_turn(fleet: Fleet) -> None:
    a, b = fleet.clients[0], fleet.clients[1]
    for trial in range(TRIALS):
        sid = new_session(a)
        answers = at_once(
            [
                (a, runs_path(sid), {"messages": f"a{trial}", "if_busy": "reject"}),
                (b, runs_path(sid), {"messages": f"b{trial}", "if_busy": "reject"}),
            ]
        )
        codes = sorted(r.status_code for r in answers)
        assert codes == [200, 409], [r.text for r in answers]
        refused = next(r for r in answers if r.status_code == 409)
        assert refused.json()["error"]["code"] == "session_busy"
        assert len(user_texts(b, sid)) == 1


def test_enqueue_stores_both_turns_once_in_arrival_order(fleet: Fleet) -> None:
    a, b = fleet.clients[0], fleet.clients[1]
    for trial in range(TRIALS):
        sid = new_session(a)
        answers = at_once(
            [
                (a, runs_path(sid), {"messages": f"a{trial}", "if_busy": "enqueue"}),
                (b, runs_path(sid), {"messages": f"b{trial}", "if_busy": "enqueue"}),
            ]
        )
        assert [r.status_code for r in answers] == [200, 200], [r.text for r in answers]
        listed = fleet.clients[2].get(runs_path(sid)).json()["data"]
        assert [r["state"] for r in listed] == ["done", "done"]
        # a run's turn is its place when it came: at once on a free session, else the
        # end of the queue; the second started only once the first had ended
        turns = sorted(listed, key=lambda r: r["started_at"])
        assert turns[0]["ended_at"] <= turns[1]["started_at"]
        arrival = [r["input"][0] for r in turns]
        assert sorted(arrival) == [f"a{trial}", f"b{trial}"]
        assert user_texts(fleet.clients[2], sid) == arrival  # once each, in arrival order


def test_queued_runs_take_their_turns_first_come_first_served(fleet: Fleet) -> None:
    sid = new_session(fleet.clients[0])
    ids = []
    for index in range(4):  # each is queued (202) before the next is sent, via each worker
        body = {"messages": f"m{index}", "background": True, "if_busy": "enqueue"}
        answer = fleet.clients[index % 3].post(runs_path(sid), json=body)
        assert answer.status_code == 202, answer.text
        ids.append(answer.json()["id"])
    ended = [wait_for(fleet.clients[2], run_id, {"done", "failed", "cancelled"}) for run_id in ids]
    assert [r["state"] for r in ended] == ["done"] * 4
    starts = [r["started_at"] for r in ended]
    assert starts == sorted(starts)
    assert user_texts(fleet.clients[1], sid) == ["m0", "m1", "m2", "m3"]
    listed = fleet.clients[1].get(runs_path(sid)).json()["data"]
    assert [r["id"] for r in listed] == ids


@pytest.mark.parametrize("strategy", ["interrupt", "rollback"])
def test_interrupt_and_rollback_stop_the_run_in_progress(fleet: Fleet, strategy: str) -> None:
    a, b = fleet.clients[0], fleet.clients[1]
    for trial in range(TRIALS):
        sid = new_session(a)
        first = a.post(runs_path(sid), json={"messages": f"first{trial}", "background": True})
        assert first.status_code == 202, first.text
        first_id = first.json()["id"]
        assert wait_for(b, first_id, {"running"})["state"] == "running"
        time.sleep(0.3)  # it is well into its model call
        second = b.post(runs_path(sid), json={"messages": f"second{trial}", "if_busy": strategy})
        assert second.status_code == 200, second.text
        assert second.json()["text"] == WORDS
        stopped = wait_for(fleet.clients[2], first_id, {"done", "failed", "cancelled"})
        assert stopped["state"] == "cancelled", stopped
        assert stopped["cancel_reason"].endswith(f"by run {second.headers['raf-run-id']}")
        session = a.get(f"/agents/talker/sessions/{sid}").json()
        texts = user_texts(a, sid)
        if strategy == "interrupt":
            assert texts == [f"first{trial}", f"second{trial}"]
            # the stopped turn is kept as a cancel leaves it: its answer cut, nothing open
            roles = [m["role"] for m in session["messages"]]
            assert roles[0] == "user" and roles[-2:] == ["user", "assistant"]
        else:
            assert texts == [f"second{trial}"]
            assert [m["role"] for m in session["messages"]] == ["user", "assistant"]


def read_events(response: httpx.Response, stop_after: int | None = None) -> list[tuple[int, str]]:
    """(id, raw event) pairs of an SSE answer, stopping after `stop_after` of them."""
    out: list[tuple[int, str]] = []
    block: list[str] = []
    for line in response.iter_lines():
        if line:
            block.append(line)
            continue
        if not block:
            continue
        number = int(next(x for x in block if x.startswith("id: "))[4:])
        out.append((number, "\n".join(x for x in block if not x.startswith("id: "))))
        block = []
        if stop_after is not None and len(out) >= stop_after:
            break
    return out


@pytest.mark.parametrize("background", [False, True])
def test_a_run_outlives_its_client_and_resumes_on_another_worker(
    fleet: Fleet, background: bool
) -> None:
    a, b, c = fleet.urls
    sid = new_session(fleet.clients[0])
    body = {"messages": "tell me", "stream": True, "background": background}
    with httpx.Client(timeout=60) as client:
        if background:
            started = client.post(f"{a}{runs_path(sid)}", json=body)
            assert started.status_code == 202
            run_id = started.json()["id"]
            with client.stream("GET", f"{a}/agents/talker/runs/{run_id}/events") as response:
                seen = read_events(response, stop_after=4)
        else:
            with client.stream("POST", f"{a}{runs_path(sid)}", json=body) as response:
                run_id = response.headers["raf-run-id"]
                seen = read_events(response, stop_after=4)
    # the connection is gone; the rest comes from another worker, from where it stopped
    with httpx.Client(timeout=60) as client:
        headers = {"last-event-id": str(seen[-1][0])}
        with client.stream(
            "GET", f"{b}/agents/talker/runs/{run_id}/events", headers=headers
        ) as response:
            rest = read_events(response)
        assert wait_for(fleet.clients[2], run_id, {"done"})["state"] == "done"
        with client.stream("GET", f"{c}/agents/talker/runs/{run_id}/events") as response:
            whole = read_events(response)
    assert seen + rest == whole
    assert [n for n, _ in whole] == list(range(1, len(whole) + 1))
    assert whole[0][1].startswith("event: run")
    text = "".join(
        json.loads(raw.split("data: ", 1)[1]).get("text", "")
        for _, raw in whole
        if raw.startswith("event: update")
    )
    assert text == WORDS


class Receiver(http.server.BaseHTTPRequestHandler):
    """Answers 500 to a run's first delivery and 200 to the next; keeps what came."""

    got: ClassVar[list[tuple[dict[str, str], bytes]]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["content-length"]))
        Receiver.got.append(({k.lower(): v for k, v in self.headers.items()}, body))
        run_id = self.headers["raf-run-id"]
        first = sum(1 for h, _ in Receiver.got if h["raf-run-id"] == run_id) == 1
        self.send_response(500 if first else 200)
        self.send_header("content-length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: Any) -> None:
        return


def test_a_webhook_is_signed_retried_after_a_500_and_recorded(fleet: Fleet) -> None:
    Receiver.got = []
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        hook = f"http://127.0.0.1:{server.server_address[1]}/hook"
        sid = new_session(fleet.clients[0])
        started = fleet.clients[0].post(
            runs_path(sid), json={"messages": "call me", "background": True, "webhook": hook}
        )
        assert started.status_code == 202, started.text
        run_id = started.json()["id"]
        deadline = time.monotonic() + 60
        run: dict[str, Any] = {}
        while time.monotonic() < deadline:
            run = fleet.clients[1].get(f"/agents/talker/runs/{run_id}").json()
            if len(run["webhook_attempts"]) >= 2:
                break
            time.sleep(0.1)
    finally:
        server.shutdown()
        server.server_close()
    assert [a["status"] for a in run["webhook_attempts"]] == [500, 200]
    assert len(Receiver.got) == 2  # one POST per attempt
    for headers, body in Receiver.got:
        assert verify(SECRET, body, headers["raf-signature"])
        assert json.loads(body)["id"] == run_id
        assert json.loads(body)["state"] == "done"
    assert Receiver.got[0][1] == Receiver.got[1][1]  # the same final run, signed anew
