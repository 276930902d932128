"""Background runs with --durable: each a DBOS workflow on its agent's queue, partitioned
by session. The worker running one is killed with SIGKILL; another worker finishes it,
and the events a client reads after re-attaching equal an uninterrupted run's, none lost
and none repeated. `RAF_TEST_BACKGROUND_TRIALS` sets the number of trials (3 by default)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.durable.helpers import kill9, lines, stop, wait_for
from tests.durable.test_workers import SERVE_APP, fresh_database
from tests.servers import Server

TRIALS = int(os.environ.get("RAF_TEST_BACKGROUND_TRIALS", "3"))
VOLATILE = ("id", "_at", "created")
"""Keys whose values differ between two runs of the same input (ids and times)."""


def events(text: str) -> list[tuple[int, str, Any]]:
    """Server-sent events as (id, name, data)."""
    out = []
    for block in text.strip().split("\n\n"):
        fields = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
        out.append((int(fields["id"]), fields["event"], json.loads(fields["data"])))
    return out


def same_shape(data: Any) -> Any:
    """`data` without the values that differ between two runs of one input."""
    if isinstance(data, dict):
        return {k: same_shape(v) for k, v in data.items() if not k.endswith(VOLATILE)}
    if isinstance(data, list):
        return [same_shape(v) for v in data]
    return data


def read_events(client: httpx.Client, run_id: str, after: int) -> list[tuple[int, str, Any]]:
    response = client.get(
        f"/agents/writer/runs/{run_id}/events", headers={"Last-Event-ID": str(after)}
    )
    assert response.status_code == 200, response.text
    return events(response.text)


def first_event(client: httpx.Client, run_id: str) -> list[tuple[int, str, Any]]:
    """The run's first event, read from its stream; then the connection is dropped."""
    text = ""
    with client.stream("GET", f"/agents/writer/runs/{run_id}/events") as response:
        assert response.status_code == 200
        for line in response.iter_lines():
            if not line and text:
                break
            text += line + "\n"
    return events(text)


def wait_ended(client: httpx.Client, run_id: str, timeout: float = 90) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run: dict[str, Any] = client.get(f"/agents/writer/runs/{run_id}").json()
        if run["ended_at"] is not None:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run_id} did not end in {timeout}s")


def start_servers(database: str, folder: Path) -> dict[str, tuple[subprocess.Popen[str], str]]:
    servers = {}
    for name in ("server-a", "server-b"):
        process = subprocess.Popen(
            [sys.executable, str(SERVE_APP), database, str(folder), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert process.stdout is not None
        url = process.stdout.readline().strip()
        servers[name] = (process, url)
        assert url.startswith("http://"), process.stderr.read() if process.stderr else ""
    return servers


@pytest.mark.parametrize("trial", range(TRIALS))
def test_a_background_run_whose_worker_is_killed_is_finished_by_another(
    postgres_server: Server, tmp_path: Path, trial: int
) -> None:
    database = fresh_database(postgres_server)
    (tmp_path / "pause-at").write_text("3")
    servers = start_servers(database, tmp_path)
    try:
        a_url = servers["server-a"][1]
        with httpx.Client(base_url=a_url, timeout=60) as a:
            started = a.post("/agents/writer/runs", json={"messages": "line", "background": True})
            assert started.status_code == 202, started.text
            run = started.json()
            assert run["state"] == "queued" and run["background"] is True
            # the client reads the first event, then its connection drops
            first = first_event(a, run["id"])
            assert first[0][:2] == (1, "run")
            wait_for(tmp_path / "reached-3")
            time.sleep(0.5)  # calls past their stop point reach their checkpoint
            running = int((tmp_path / "reached-3").read_text())
            victim = next(n for n, (p, _) in servers.items() if p.pid == running)
            kill9(servers[victim][0])
            survivor = servers[next(n for n in servers if n != victim)][1]
        with httpx.Client(base_url=survivor, timeout=90) as other:
            ended = wait_ended(other, run["id"])
            assert ended["state"] == "done", ended
            assert ended["result"]["text"] == "all done: line"
            rest = read_events(other, run["id"], 1)
            interrupted = first + rest
            assert [n for n, _, _ in interrupted] == list(range(1, len(interrupted) + 1))
            assert ended["events"] == len(interrupted)
            assert lines(tmp_path / "out.txt") == ["line 1", "line 2", "line 3", "line 4"]
            # the same input, never interrupted, in a session of its own
            again = other.post(
                "/agents/writer/runs", json={"messages": "line", "background": True}
            ).json()
            wait_ended(other, again["id"])
            whole = read_events(other, again["id"], 0)
        assert [(n, e, same_shape(d)) for n, e, d in interrupted] == [
            (n, e, same_shape(d)) for n, e, d in whole
        ]
        assert [e for _, e, _ in whole][-1] == "update" and whole[-1][2]["kind"] == "finished"
    finally:
        for process, _ in servers.values():
            stop(process)


def test_two_background_runs_of_one_session_run_one_after_the_other(
    postgres_server: Server, tmp_path: Path
) -> None:
    """The queue is partitioned by session: the second run starts once the first has
    saved the session, so it finds the first's four tool calls there and makes none."""
    database = fresh_database(postgres_server)
    servers = start_servers(database, tmp_path)
    try:
        (a_url, b_url) = (url for _, url in servers.values())
        with httpx.Client(base_url=a_url, timeout=60) as a, httpx.Client(base_url=b_url) as b:
            sid = a.post("/agents/writer/sessions", json={}).json()["id"]
            first = a.post(
                f"/agents/writer/sessions/{sid}/runs",
                json={"messages": "first", "background": True},
            ).json()
            second = b.post(
                f"/agents/writer/sessions/{sid}/runs",
                json={"messages": "second", "background": True},
            ).json()
            assert wait_ended(a, first["id"])["state"] == "done"
            assert wait_ended(b, second["id"])["state"] == "done"
            assert lines(tmp_path / "out.txt") == [f"first {k}" for k in range(1, 5)]
            session = a.get(f"/agents/writer/sessions/{sid}").json()
            asked = [m["contents"][0]["text"] for m in session["messages"] if m["role"] == "user"]
            assert asked == ["first", "second"]
            refused = a.post(
                f"/agents/writer/sessions/{sid}/runs",
                json={"messages": "x", "background": True, "if_busy": "interrupt"},
            )
            assert refused.status_code == 422
            assert refused.json()["error"]["code"] == "if_busy_not_supported"
    finally:
        for process, _ in servers.values():
            stop(process)
