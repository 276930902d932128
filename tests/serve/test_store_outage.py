"""The session store goes away for five seconds under load, behind three real `raf serve`
workers, and comes back: every worker says so on `/ready` within three seconds, no client
is told it made a mistake (no 400) or shown where the store is, and once the store is
back no session is left busy by a run that failed while it was away.

PostgreSQL is stopped (its fast shutdown) and started again on the same data; Redis,
which keeps nothing on disk here, is frozen (SIGSTOP) and thawed, so its connections
hang rather than fail: both must fail requests fast. The leases last 120 s, so a lease
left behind would keep its session busy long after the test's bounds.
"""

from __future__ import annotations

import concurrent.futures
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.cli.helpers import raf_env, script
from tests.servers import PG_PASSWORD, Server, start_postgres, start_redis

pytestmark = pytest.mark.slow

WORKERS = 3
SESSIONS = 24
CLIENTS = 8
OUTAGE = 5.0
READY_WITHIN = 3.0
"""Seconds after the store went away by which every worker's `/ready` says 503."""
SETTLE = 2.0
"""Seconds after the store is back by which no session may be busy any more (a lease
left behind would hold it for 120 s)."""
WATCH = 1.0
"""Seconds the load and the readiness polls go on past SETTLE, to be checked."""
REQUESTS_PER_CLIENT = 80
"""The load is bounded in count as well as in time."""
LEASE_SECONDS = "120"
DATABASE = "outage_store_db"
REDIS_PASSWORD = "outage-redis-secret"


@dataclass
class Outage:
    """A store that can be taken away and given back, and what must never reach a
    client while it is away (its address, user, database, password)."""

    url: str
    secrets: list[str]
    begin: Callable[[], None]
    end: Callable[[], None]


def _postgres() -> Iterator[Outage]:
    import psycopg

    server = start_postgres()
    try:
        with psycopg.connect(server.url, autocommit=True) as conn:
            conn.execute(f"CREATE DATABASE {DATABASE}")
        url = server.url.rsplit("/", 1)[0] + f"/{DATABASE}"
        port = url.rsplit(":", 1)[1].split("/")[0]
        yield Outage(
            url=url,
            secrets=["postgresql", DATABASE, PG_PASSWORD, "raf@", "127.0.0.1", f":{port}"],
            begin=server.halt,
            end=server.resume,
        )
    finally:
        server.stop()


def _redis() -> Iterator[Outage]:
    server: Server = start_redis(password=REDIS_PASSWORD)
    pid = server.process.pid
    try:
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        yield Outage(
            url=server.url,
            secrets=["redis://", REDIS_PASSWORD, "127.0.0.1", f":{port}"],
            begin=lambda: os.kill(pid, signal.SIGSTOP),
            end=lambda: os.kill(pid, signal.SIGCONT),
        )
    finally:
        os.kill(pid, signal.SIGCONT)
        server.stop()


@pytest.fixture(params=["postgres", "redis"])
def outage(request: pytest.FixtureRequest) -> Iterator[Outage]:
    yield from _postgres() if request.param == "postgres" else _redis()


@dataclass
class Workers:
    urls: list[str]
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)
    logs: list[Path] = field(default_factory=list)


def start_workers(tmp_path: Path, store: str) -> Workers:
    """Three `raf serve` processes on one store, each on its own port (so that each can
    be asked whether it is ready), their logs in files."""
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "greeter.yaml").write_text("name: greeter\ninstructions: Greet.\n")
    model = script(tmp_path, [{"text": "Hello", "delay": 0.05}] * 2000)
    workers = Workers(urls=[])
    command = [sys.executable, "-m", "raf.cli", "serve", str(folder), "--port", "0"]
    command += ["--model", model, "--sessions", store, "--lease-seconds", LEASE_SECONDS]
    try:
        for index in range(WORKERS):
            log = tmp_path / f"worker-{index}.log"
            with open(log, "wb") as out:
                workers.processes.append(
                    subprocess.Popen(
                        command, cwd=folder, env=raf_env(tmp_path), stdout=out, stderr=out
                    )
                )
            workers.logs.append(log)
        for process, log in zip(workers.processes, workers.logs, strict=True):
            deadline = time.monotonic() + 60
            while True:
                found = re.search(r"on (http://\S+) \(auth", log.read_text(errors="replace"))
                if found:
                    workers.urls.append(found.group(1))
                    break
                assert process.poll() is None, log.read_text(errors="replace")
                assert time.monotonic() < deadline, "a worker did not start"
                time.sleep(0.05)
    except BaseException:
        stop_workers(workers)
        raise
    return workers


def stop_workers(workers: Workers) -> None:
    for process in workers.processes:
        if process.poll() is None:
            process.send_signal(signal.SIGINT)
    for process in workers.processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


@dataclass
class Seen:
    """One answer: when its request started and ended, where, and what came back."""

    started: float
    ended: float
    worker: int
    path: str
    status: int
    text: str
    client: int | None = None
    """Which load client sent it (None: a readiness poll)."""


def load(
    workers: Workers, sessions: list[str], client: int, stop: threading.Event, seen: list[Seen]
) -> None:
    """One client: runs in its own sessions (one at a time, so none is ever busy because
    of the load itself), through every worker in turn, and a stored Responses request
    now and then; until told to stop or its count is spent."""
    mine = sessions[client::CLIENTS]
    clients = [httpx.Client(base_url=url, timeout=30) for url in workers.urls]
    try:
        for number in range(REQUESTS_PER_CLIENT):
            if stop.is_set():
                return
            worker = (client + number) % WORKERS
            if number % 5 == 4:
                path, body = "/v1/responses", {"model": "greeter", "input": "hi"}
            else:
                session = mine[number % len(mine)]
                path, body = f"/agents/greeter/sessions/{session}/runs", {"messages": "hi"}
            started = time.monotonic()
            try:
                got = clients[worker].post(path, json=body)
            except httpx.HTTPError as exc:  # a client timeout is a hung request
                seen.append(Seen(started, time.monotonic(), worker, path, 0, repr(exc), client))
                continue
            ended = time.monotonic()
            seen.append(Seen(started, ended, worker, path, got.status_code, got.text, client))
    finally:
        for one in clients:
            one.close()


def poll_ready(workers: Workers, worker: int, stop: threading.Event, seen: list[Seen]) -> None:
    with httpx.Client(base_url=workers.urls[worker], timeout=30) as client:
        while not stop.is_set():
            started = time.monotonic()
            try:
                got = client.get("/ready")
            except httpx.HTTPError as exc:
                seen.append(Seen(started, time.monotonic(), worker, "/ready", 0, repr(exc)))
                continue
            seen.append(
                Seen(started, time.monotonic(), worker, "/ready", got.status_code, got.text)
            )
            time.sleep(0.1)


def under_load(seen: list[Seen], ready: list[Seen], timeout: float = 60) -> None:
    """Wait until every load client has had two answers and every worker has said it is
    ready: the load flows through all of them before the store goes away."""
    deadline = time.monotonic() + timeout
    while True:
        answered = [a.client for a in list(seen) if a.status == 200]
        said_ready = {a.worker for a in list(ready) if a.status == 200}
        if all(answered.count(c) >= 2 for c in range(CLIENTS)) and len(said_ready) == WORKERS:
            return
        assert time.monotonic() < deadline, "the load did not get going"
        time.sleep(0.05)


def check_free(url: str, sessions: list[str]) -> None:
    """Each session is not running, and a new run in it goes through."""
    with httpx.Client(base_url=url, timeout=30) as client:
        for session in sessions:
            got = client.get(f"/agents/greeter/sessions/{session}")
            assert got.status_code == 200 and got.json()["running"] is False, got.text
            ran = client.post(
                f"/agents/greeter/sessions/{session}/runs", json={"messages": "after"}
            )
            assert ran.status_code == 200, ran.text


def test_a_store_outage_under_load_fails_fast_shows_nothing_and_leaves_no_session_busy(
    outage: Outage, tmp_path: Path
) -> None:
    workers = start_workers(tmp_path, outage.url)
    try:
        with httpx.Client(base_url=workers.urls[0], timeout=30) as client:
            sessions = [
                client.post("/agents/greeter/sessions").json()["id"] for _ in range(SESSIONS)
            ]
        seen: list[Seen] = []
        ready: list[Seen] = []
        stop_load, stop_ready = threading.Event(), threading.Event()
        threads = [
            threading.Thread(target=load, args=(workers, sessions, c, stop_load, seen))
            for c in range(CLIENTS)
        ]
        pollers = [
            threading.Thread(target=poll_ready, args=(workers, w, stop_ready, ready))
            for w in range(WORKERS)
        ]
        for thread in [*threads, *pollers]:
            thread.start()
        try:
            under_load(seen, ready)
            outage.begin()
            down = time.monotonic()
            time.sleep(OUTAGE)
            outage.end()
            up = time.monotonic()
            time.sleep(SETTLE + WATCH)
        finally:
            stop_load.set()
            stop_ready.set()
            for thread in [*threads, *pollers]:
                thread.join(timeout=60)
        answers = seen + ready

        # nobody is told the store's outage is their mistake, or where the store is
        assert not [a for a in answers if a.status == 400], "a 400 was answered"
        for answer in answers:
            for secret in outage.secrets:
                assert secret not in answer.text, f"{secret!r} shown in {answer.text[:300]}"
        # every failure is the store's 503, in the shape of the API asked
        failed = [a for a in seen if a.status == 503]
        assert failed, "the outage was not seen at all"
        for answer in failed:
            if answer.path.startswith("/v1/"):  # OpenAI's shape: no code of raf's own
                error = json.loads(answer.text)["error"]
                assert error["type"] == "server_error", answer.text
                assert error["code"] is None, answer.text
                assert error["message"].startswith("session_store_error: "), answer.text
            else:
                assert '"session_store_error"' in answer.text, answer.text
        assert not [a for a in answers if a.status == 0], "a request hung past 30 s"
        # every worker said it was not ready within 3 s of the outage
        for worker in range(WORKERS):
            told = [a.ended - down for a in ready if a.worker == worker and a.status == 503]
            assert told and min(told) <= READY_WITHIN, (worker, told[:3])
            assert [a for a in ready if a.worker == worker and a.started > up + SETTLE]
            assert all(
                a.status == 200 for a in ready if a.worker == worker and a.started > up + SETTLE
            )
        # once the store is back, no session is busy: not during the load...
        late = [a for a in seen if a.started > up + SETTLE]
        assert late, "the load was over before the store had settled"
        busy = [a for a in late if a.status == 409]
        assert not busy, busy[0].text
        # ...and not after it, in any worker (each worker's sessions checked in a thread)
        with concurrent.futures.ThreadPoolExecutor(WORKERS) as pool:
            for done in [
                pool.submit(check_free, workers.urls[w], sessions[w::WORKERS])
                for w in range(WORKERS)
            ]:
                done.result()
    finally:
        stop_workers(workers)
