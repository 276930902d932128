"""Scheduled runs with --durable: a schedule posted to one of two workers ticks every
second, and each tick runs exactly once across both (counted by runs and by their side
effects); bad schedules are clear errors; without --durable, schedules are refused with
the reason, from a document and over HTTP."""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
from dbos import DBOSClient

from raf.durable import JsonSerializer
from tests.cli.helpers import raf_env, script
from tests.durable.helpers import lines, stop
from tests.durable.test_background import start_servers
from tests.durable.test_workers import fresh_database
from tests.servers import Server

TICKING = 6.0
"""Seconds the every-second schedule is left to tick."""


def runs_of(client: httpx.Client, session: str) -> list[dict[str, Any]]:
    found = client.get(f"/agents/writer/sessions/{session}/runs")
    assert found.status_code == 200, found.text
    data: list[dict[str, Any]] = found.json()["data"]
    return data


def test_each_tick_runs_once_across_two_workers(postgres_server: Server, tmp_path: Path) -> None:
    database = fresh_database(postgres_server)
    servers = start_servers(database, tmp_path)
    client = DBOSClient(
        system_database_url=database, application_name="raf", serializer=JsonSerializer()
    )
    try:
        a, b = (httpx.Client(base_url=url, timeout=60) for _, url in servers.values())
        bad = a.post("/schedules", json={"agent": "writer", "cron": "61 * * * *", "input": "x"})
        assert bad.status_code == 422 and "61 is outside 0-59" in bad.text
        unknown = a.post("/schedules", json={"agent": "nobody", "cron": "* * * * *", "input": "x"})
        assert unknown.status_code == 404
        made = a.post(
            "/schedules",
            json={
                "agent": "writer",
                "cron": "* * * * * *",
                "input": "tick",
                "session_id": "ticks",
                "name": "every-second",
            },
        )
        assert made.status_code == 201, made.text
        again = a.post(
            "/schedules",
            json={"agent": "writer", "cron": "* * * * *", "input": "x", "name": "every-second"},
        )
        assert again.status_code == 409
        assert [s["id"] for s in b.get("/schedules").json()["data"]] == ["every-second"]
        time.sleep(TICKING)
        assert b.delete("/schedules/every-second").status_code == 204
        assert a.get("/schedules/every-second").status_code == 404
        time.sleep(2)  # a tick that fired as it was deleted is queued by now
        deadline = time.monotonic() + 90
        runs = runs_of(b, "ticks")
        while any(r["ended_at"] is None for r in runs) and time.monotonic() < deadline:
            time.sleep(0.3)
            runs = runs_of(b, "ticks")
        ticks = client.list_workflows(name="raf.scheduled_run")
        assert len(ticks) >= TICKING / 2, ticks  # it ticked, about once a second
        assert len({t.workflow_id for t in ticks}) == len(ticks)
        # one run per tick, each done, each tick's message in the session once
        assert len(runs) == len(ticks)
        assert len({r["id"] for r in runs}) == len(runs)
        assert all(r["state"] == "done" for r in runs), runs
        assert all(r["input"] == ["tick"] for r in runs)
        session = b.get("/agents/writer/sessions/ticks").json()
        asked = [m for m in session["messages"] if m["role"] == "user"]
        assert len(asked) == len(ticks)
        # the first run's four tool calls ran once (later runs find them in the session)
        assert lines(tmp_path / "out.txt") == [f"tick {k}" for k in range(1, 5)]
        assert runs_of(a, "ticks") == runs
        a.close()
        b.close()
    finally:
        client.destroy()
        for process, _ in servers.values():
            stop(process)


TICKER = 'name: ticker\ninstructions: hi\nschedule:\n  - {cron: "*/5 * * * *", input: report}\n'


def test_without_durable_a_documents_schedule_is_refused(tmp_path: Path) -> None:
    (tmp_path / "ticker.yaml").write_text(TICKER)
    done = subprocess.run(
        [sys.executable, "-m", "raf.cli", "serve", str(tmp_path / "ticker.yaml"), "--port", "0"],
        env=raf_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "declares a schedule; scheduled runs need --durable" in done.stderr


def test_without_durable_posting_a_schedule_is_refused(tmp_path: Path) -> None:
    (tmp_path / "plain.yaml").write_text("name: plain\ninstructions: hi\n")
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "raf.cli",
            "serve",
            str(tmp_path / "plain.yaml"),
            "--port",
            "0",
            "--model",
            script(tmp_path, ["hello"]),
        ],
        env=raf_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"on (http://\S+) ", line)
        assert found, line
        with httpx.Client(base_url=found.group(1), timeout=30) as client:
            refused = client.post(
                "/schedules", json={"agent": "plain", "cron": "* * * * *", "input": "x"}
            )
            assert refused.status_code == 409
            assert refused.json()["error"]["code"] == "schedules_need_durable"
            assert "--durable" in refused.json()["error"]["message"]
            assert client.get("/schedules").status_code == 409
    finally:
        stop(process)


def serve_durable(tmp_path: Path, document: str, **env: str) -> tuple[str, subprocess.Popen[str]]:
    """`raf serve --durable` (SQLite) on one document with a scripted model; its URL."""
    (tmp_path / "agent.yaml").write_text(document)
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "raf.cli",
            "serve",
            str(tmp_path / "agent.yaml"),
            "--port",
            "0",
            "--model",
            script(tmp_path, ["done"] * 200),
            "--durable",
            f"sqlite:///{tmp_path / 'dbos.sqlite'}",
        ],
        env={**raf_env(tmp_path), **env},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"on (http://\S+) ", line)
    if not found:
        stop(process)
        raise AssertionError(line + process.stderr.read())
    return found.group(1), process


EVERY_SECOND = (
    "name: ticker\ninstructions: hi\nschedule:\n"
    '  - {cron: "* * * * * *", input: report, session: ticks, name: often}\n'
)


def test_a_documents_schedule_ticks_with_durable(tmp_path: Path) -> None:
    url, process = serve_durable(tmp_path, EVERY_SECOND)
    try:
        with httpx.Client(base_url=url, timeout=30) as client:
            listed = client.get("/schedules").json()["data"]
            assert [(s["id"], s["declared_in"], s["cron"]) for s in listed] == [
                ("often", "document", "* * * * * *")
            ]
            deadline = time.monotonic() + 60
            runs: list[dict[str, Any]] = []
            while time.monotonic() < deadline:
                found = client.get("/agents/ticker/sessions/ticks/runs")
                runs = found.json()["data"] if found.status_code == 200 else []
                if sum(r["state"] == "done" for r in runs) >= 2:
                    break
                time.sleep(0.3)
            assert sum(r["state"] == "done" for r in runs) >= 2, runs
            assert runs[0]["input"] == ["report"] and runs[0]["background"] is True
            kept = client.delete("/schedules/often")
            assert kept.status_code == 409 and kept.json()["error"]["code"] == "schedule_declared"
    finally:
        stop(process)


def test_a_schedule_is_its_callers_alone(tmp_path: Path) -> None:
    url, process = serve_durable(
        tmp_path,
        "name: plain\ninstructions: hi\n",
        RAF_SERVE_TOKEN="token-a-0123456789abcdef,token-b-0123456789abcdef",
    )
    try:
        a = httpx.Client(
            base_url=url, timeout=30, headers={"Authorization": "Bearer token-a-0123456789abcdef"}
        )
        b = httpx.Client(
            base_url=url, timeout=30, headers={"Authorization": "Bearer token-b-0123456789abcdef"}
        )
        made = a.post(
            "/schedules",
            json={"agent": "plain", "cron": "0 0 1 1 *", "input": "x", "name": "yearly"},
        )
        assert made.status_code == 201, made.text
        assert [s["id"] for s in a.get("/schedules").json()["data"]] == ["yearly"]
        assert b.get("/schedules").json()["data"] == []
        assert b.get("/schedules/yearly").status_code == 404
        assert b.delete("/schedules/yearly").status_code == 404
        # the same name is another caller's own
        assert (
            b.post(
                "/schedules",
                json={"agent": "plain", "cron": "0 0 1 1 *", "input": "y", "name": "yearly"},
            ).status_code
            == 201
        )
        assert a.get("/schedules/yearly").json()["input"] == "x"
        assert a.delete("/schedules/yearly").status_code == 204
        assert b.get("/schedules/yearly").json()["input"] == "y"
        a.close()
        b.close()
    finally:
        stop(process)
