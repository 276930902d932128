"""Several workers on one PostgreSQL system database: runs queued per agent and spread
over the workers; a worker killed with SIGKILL has its runs finished by another, each
tool call's side effect exactly once."""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psycopg
from dbos import DBOSClient, EnqueueOptions

from raf.core.messages import ChatMessage
from raf.durable import JsonSerializer, queue_name
from tests.durable.helpers import kill9, lines, start_app, stop, wait_for
from tests.servers import Server

RUNS = 8
SERVE_APP = Path(__file__).with_name("serve_app.py")


def fresh_database(server: Server) -> str:
    """A new empty database on the test server; its URL."""
    name = f"durable_{uuid.uuid4().hex[:10]}"
    with psycopg.connect(server.url, autocommit=True) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = server.url.rpartition("/")
    return f"{base}/{name}"


def request(run_id: str) -> dict[str, object]:
    return {
        "agent": "writer",
        "session_id": run_id,
        "messages": [ChatMessage.user(run_id).to_dict()],
        "approvals": [],
    }


def test_two_workers_one_killed_every_run_finishes_once(
    postgres_server: Server, tmp_path: Path
) -> None:
    database = fresh_database(postgres_server)
    (tmp_path / "pause-at").write_text("3")  # the first run to reach call 3 stops there
    env = {"RAF_TEST_TAKEOVER": "3", "RAF_TEST_TOOL_SECONDS": "0.1", "RAF_TEST_CONCURRENCY": "4"}
    workers = {
        name: start_app(["worker", database, str(tmp_path), "300"], RAF_TEST_EXECUTOR=name, **env)
        for name in ("worker-a", "worker-b")
    }
    client: DBOSClient | None = None
    try:
        for process in workers.values():
            assert process.stdout is not None
            line = process.stdout.readline().strip()
            if line != "ready":
                process.kill()
                _, err = process.communicate(timeout=30)
                raise AssertionError(f"a worker did not start ({line!r}):\n{err[-3000:]}")
        client = DBOSClient(
            system_database_url=database, application_name="raf", serializer=JsonSerializer()
        )
        run_ids = [f"run-{i}" for i in range(RUNS)]
        for run_id in run_ids:
            options: EnqueueOptions = {
                "workflow_name": "raf.agent_run",
                "queue_name": queue_name("writer"),
                "workflow_id": run_id,
                "queue_partition_key": run_id,  # its session's id
            }
            client.enqueue(options, request(run_id))
        wait_for(tmp_path / "reached-3")
        time.sleep(0.5)  # calls past their stop point reach their checkpoint
        stopped_pid = int((tmp_path / "reached-3").read_text())
        victim = next(n for n, p in workers.items() if p.pid == stopped_pid)
        kill9(workers[victim])
        survivor = next(p for n, p in workers.items() if n != victim)

        deadline = time.monotonic() + 120
        statuses: dict[str, str] = {}
        while time.monotonic() < deadline:
            statuses = {r: client.retrieve_workflow(r).get_status().status for r in run_ids}
            if all(s in ("SUCCESS", "ERROR", "CANCELLED") for s in statuses.values()):
                break
            assert survivor.poll() is None, "the surviving worker died"
            time.sleep(0.2)
        assert statuses == dict.fromkeys(run_ids, "SUCCESS")
        results: dict[str, dict[str, Any]] = {
            r: client.retrieve_workflow(r).get_result(polling_interval_sec=0.1) for r in run_ids
        }
        assert {
            r: out["response"]["messages"][-1]["contents"][0]["text"] for r, out in results.items()
        } == {r: f"all done: {r}" for r in run_ids}
        written = lines(tmp_path / "out.txt")
        assert sorted(written) == sorted(f"{r} {k}" for r in run_ids for k in range(1, 5))
        # the work was spread: both workers called the model
        pids = {line.split()[0] for line in lines(tmp_path / "model-calls.txt")}
        assert {str(p.pid) for p in workers.values()} <= pids
    finally:
        if client is not None:
            client.destroy()
        for process in workers.values():
            stop(process)


def test_a_run_posted_to_a_killed_server_is_finished_by_another(
    postgres_server: Server, tmp_path: Path
) -> None:
    database = fresh_database(postgres_server)
    (tmp_path / "pause-at").write_text("3")
    servers = {
        name: subprocess.Popen(
            [sys.executable, str(SERVE_APP), database, str(tmp_path), name],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("server-a", "server-b")
    }
    try:
        urls = {}
        for name, process in servers.items():
            assert process.stdout is not None
            urls[name] = process.stdout.readline().strip()
            assert urls[name].startswith("http://"), process.stderr.read() if process.stderr else ""
        with httpx.Client(base_url=urls["server-a"], timeout=120) as a:
            sid = a.post("/agents/writer/sessions", json={}).json()["id"]

            def post_run() -> None:
                with contextlib.suppress(httpx.HTTPError):  # its server may be killed
                    a.post(f"/agents/writer/sessions/{sid}/runs", json={"messages": "line"})

            poster = threading.Thread(target=post_run, daemon=True)
            poster.start()
            wait_for(tmp_path / "reached-3")
            time.sleep(0.5)  # calls past their stop point reach their checkpoint
            # the queue gave the run to either server: kill the one running it
            running = int((tmp_path / "reached-3").read_text())
            victim = next(n for n, p in servers.items() if p.pid == running)
            kill9(servers[victim])
            survivor = next(n for n in servers if n != victim)
            with httpx.Client(base_url=urls[survivor], timeout=60) as other:
                deadline = time.monotonic() + 90
                session: dict[str, Any] = {}
                while time.monotonic() < deadline:
                    session = other.get(f"/agents/writer/sessions/{sid}").json()
                    texts = [c.get("text") for m in session["messages"] for c in m["contents"]]
                    if "all done: line" in texts:
                        break
                    time.sleep(0.2)
                else:
                    raise AssertionError(f"the run was not finished by {survivor}: {session}")
            poster.join(timeout=60)
        assert lines(tmp_path / "out.txt") == ["line 1", "line 2", "line 3", "line 4"]
    finally:
        for process in servers.values():
            stop(process)


def test_workers_launching_together_take_turns_on_the_system_database(
    postgres_server: Server,
) -> None:
    """Two workers starting at once on a fresh database would both create DBOS's schema
    (it checks, then creates) and one would fail: the launch lock makes the second wait."""
    import threading

    from raf.durable.workers import LaunchLock

    database = fresh_database(postgres_server)
    first, second = LaunchLock(database), LaunchLock(database)
    first.acquire()
    waiting = threading.Thread(target=second.acquire, daemon=True)
    waiting.start()
    try:
        waiting.join(0.5)
        assert waiting.is_alive()  # held by the first
        first.release()
        waiting.join(30)
        assert not waiting.is_alive()
    finally:
        first.release()
        second.release()
