"""`raf serve --durable`: a run paused for approval survives the server's SIGKILL and goes
on when the approval is posted to the restarted server (streamed runs send whole
messages); `--workers N` serves from N
processes on one PostgreSQL database."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from raf.durable import sqlite_url
from tests.cli.helpers import APPROVING_AGENT, raf_env, script
from tests.durable.helpers import kill9, stop
from tests.durable.test_workers import fresh_database
from tests.servers import Server


def serve(tmp_path: Path, model: str, *extra: str) -> tuple[str, subprocess.Popen[str]]:
    """Start `raf serve` on the agent folder; its URL once it listens."""
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "raf.cli",
            "serve",
            str(tmp_path / "agents"),
            "--port",
            "0",
            "--model",
            model,
            *extra,
        ],
        cwd=tmp_path / "agents",
        env=raf_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stderr is not None
    line = process.stderr.readline()
    found = re.search(r"on (http://\S+) \(auth: off \(loopback only\), durable: ", line)
    if not found:
        stop(process)
        raise AssertionError(line + process.stderr.read())
    return found.group(1), process


def agents(tmp_path: Path) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "filer.yaml").write_text(APPROVING_AGENT, encoding="utf-8")
    (tmp_path / "outside.txt").write_text("outside text")


def test_an_approval_pause_survives_a_kill_and_is_answered_over_http(tmp_path: Path) -> None:
    agents(tmp_path)
    durable = ["--durable", sqlite_url(tmp_path / "dbos.sqlite")]
    durable += ["--sessions", str(tmp_path / "sessions.sqlite")]
    ask = {"calls": [{"name": "read_file", "arguments": {"path": "../outside.txt"}, "id": "r1"}]}
    url, first = serve(tmp_path, script(tmp_path, [ask], "first.json"), *durable)
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            paused = client.post("/agents/filer/runs", json={"messages": "read it"}).json()
        assert paused["finish_reason"] == "awaiting_approval", paused
        kill9(first)
    finally:
        stop(first)
    # the new process's model starts its script afresh: a replay that called the model
    # again for the first turn would take the first reply, and the run would not end so
    url, second = serve(
        tmp_path, script(tmp_path, ["It says: outside text", "And more"], "second.json"), *durable
    )
    try:
        with httpx.Client(base_url=url, timeout=60) as client:
            sid = paused["session_id"]
            done = client.post(
                f"/agents/filer/sessions/{sid}/approvals",
                json={"responses": [{"call_id": "r1", "approved": True}]},
            )
            assert done.status_code == 200, done.text
            assert done.json()["text"] == "It says: outside text"
            again = client.post(
                f"/agents/filer/sessions/{sid}/approvals",
                json={"responses": [{"call_id": "r1", "approved": True}]},
            )
            assert (
                again.status_code == 409 and again.json()["error"]["code"] == "approval_not_pending"
            )
            stream = client.post(
                f"/agents/filer/sessions/{sid}/runs", json={"messages": "more", "stream": True}
            )
            assert stream.status_code == 200, stream.text
            events = [
                json.loads(line[len("data: ") :])
                for line in stream.text.splitlines()
                if line.startswith("data: ")
            ]
            text = "".join(e.get("text", "") for e in events if e.get("kind") == "text_delta")
            assert text == "And more"
            assert any(e.get("kind") == "finished" for e in events)
    finally:
        stop(second)


def test_workers_share_one_port_and_one_postgres(postgres_server: Server, tmp_path: Path) -> None:
    agents(tmp_path)
    (tmp_path / "agents" / "greeter.yaml").write_text("name: greeter\ninstructions: Greet.\n")
    database = fresh_database(postgres_server)
    model = script(tmp_path, ["Hello"] * 20)
    url, parent = serve(tmp_path, model, "--durable", database, "--workers", "2", "--max-runs", "4")
    try:
        assert parent.stderr is not None
        second = parent.stderr.readline()
        assert "durable: raf-" in second  # the other worker is up too
        with httpx.Client(base_url=url, timeout=60) as client:
            texts = [
                client.post("/agents/greeter/runs", json={"messages": "hi"}).json()["text"]
                for _ in range(6)
            ]
        assert texts == ["Hello"] * 6
        parent.send_signal(signal.SIGINT)  # the parent stops its workers
        assert parent.wait(timeout=30) == 0
    finally:
        stop(parent)


def test_several_workers_need_postgres(tmp_path: Path) -> None:
    agents(tmp_path)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "raf.cli",
            "serve",
            str(tmp_path / "agents"),
            "--workers",
            "2",
            "--durable",
            sqlite_url(tmp_path / "d.sqlite"),
        ],
        capture_output=True,
        text=True,
        env=raf_env(tmp_path),
        timeout=60,
        check=False,
    )
    assert done.returncode == 2
    assert "several workers need a shared system database" in done.stderr
