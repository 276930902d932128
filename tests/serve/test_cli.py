"""`raf serve` as a real program: a folder of documents, a scripted model, a free port."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.cli.helpers import APPROVING_AGENT, raf, raf_env, script

TOKEN = "cli-token-0123456789abcdef"


@pytest.fixture
def program(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "filer.yaml").write_text(APPROVING_AGENT, encoding="utf-8")
    (folder / "greeter.yaml").write_text("name: greeter\ninstructions: Greet.\n")
    (folder / "notes.txt").write_text("not a document")
    (tmp_path / "outside.txt").write_text("outside text")
    replies = [
        "Hello from greeter",
        {"calls": [{"name": "read_file", "arguments": {"path": "../outside.txt"}, "id": "r1"}]},
        "It says: outside text",
    ]
    model = script(tmp_path, replies)
    env = raf_env(tmp_path)
    env["RAF_SERVE_TOKEN"] = TOKEN
    process = subprocess.Popen(
        [sys.executable, "-m", "raf.cli", "serve", str(folder), "--port", "0", "--model", model],
        cwd=folder,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        line = process.stderr.readline()
        found = re.search(r"on (http://\S+) \(auth: bearer token\)", line)
        assert found, line + process.stderr.read()
        assert "filer, greeter" in line
        yield found.group(1), process
    finally:
        process.kill()
        process.wait(timeout=10)


def test_raf_serve_hosts_a_folder_and_stops_on_ctrl_c(program, tmp_path: Path) -> None:
    url, process = program
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=url, headers=headers, timeout=30) as client:
        assert [a["name"] for a in client.get("/agents").json()["agents"]] == ["filer", "greeter"]
        hello = client.post("/agents/greeter/runs", json={"messages": "hi"}).json()
        assert hello["text"] == "Hello from greeter"
        paused = client.post("/agents/filer/runs", json={"messages": "read it"}).json()
        assert paused["finish_reason"] == "awaiting_approval"
        sid = paused["session_id"]
        done = client.post(
            f"/agents/filer/sessions/{sid}/approvals",
            json={"responses": [{"call_id": "r1", "approved": True}]},
        ).json()
        assert done["text"] == "It says: outside text"
        results = [
            c for m in done["messages"] for c in m["contents"] if c["type"] == "function_result"
        ]
        assert "outside text" in json.dumps(results)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=20) == 0
    # sessions were kept in the data folder's SQLite file
    assert (tmp_path / "data" / "serve-sessions.sqlite").exists()


def test_raf_serve_refuses_to_bind_beyond_loopback_without_a_token(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: a\n")
    done = raf(tmp_path, "serve", "a.yaml", "--host", "0.0.0.0", "--port", "0")
    assert done.returncode == 1
    assert "refusing to serve on '0.0.0.0' without a bearer token" in done.stderr
    nothing = raf(tmp_path, "serve", "missing.yaml")
    assert nothing.returncode == 1 and "neither an agent document nor a folder" in nothing.stderr


def test_raf_serve_workers_share_the_port_and_the_sessions_without_durable(
    tmp_path: Path,
) -> None:
    folder = tmp_path / "agents"
    folder.mkdir()
    (folder / "greeter.yaml").write_text("name: greeter\ninstructions: Greet.\n")
    model = script(tmp_path, ["Hello"] * 40)  # each worker plays its own copy
    sessions = str(tmp_path / "s.sqlite")
    command = [sys.executable, "-m", "raf.cli", "serve", str(folder), "--port", "0"]
    process = subprocess.Popen(
        [*command, "--model", model, "--workers", "2", "--sessions", sessions],
        cwd=folder,
        env=raf_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stderr is not None
        started = [process.stderr.readline() for _ in range(2)]  # one line from each worker
        urls = {m.group(1) for m in (re.search(r"on (http://\S+) ", s) for s in started) if m}
        assert len(urls) == 1, started  # one port
        (url,) = urls
        made = []
        for _ in range(12):  # a new connection each time: the kernel hands them to both
            with httpx.Client(base_url=url, timeout=30) as client:
                made.append(client.post("/agents/greeter/runs", json={"messages": "hi"}).json())
        assert {m["text"] for m in made} == {"Hello"}
        for run in made:  # whichever worker made a session, every worker finds it
            with httpx.Client(base_url=url, timeout=30) as client:
                got = client.get(f"/agents/greeter/sessions/{run['session_id']}")
                assert got.status_code == 200 and got.json()["running"] is False
    finally:
        process.send_signal(signal.SIGINT)  # the parent stops its workers
        try:
            assert process.wait(timeout=30) == 0
        finally:
            if process.poll() is None:
                process.kill()
                process.wait(timeout=10)


def test_raf_serve_refuses_several_workers_on_memory_sessions(tmp_path: Path) -> None:
    (tmp_path / "greeter.yaml").write_text("name: greeter\ninstructions: Greet.\n")
    done = raf(tmp_path, "serve", "greeter.yaml", "--workers", "2", "--sessions", "memory")
    assert done.returncode == 2
    assert "several workers cannot share in-memory sessions" in done.stderr
    assert "postgresql://" in done.stderr


def test_raf_serve_refuses_a_store_timeout_that_is_not_a_number_of_seconds(
    tmp_path: Path,
) -> None:
    (tmp_path / "greeter.yaml").write_text("name: greeter\ninstructions: Greet.\n")
    for bad in ("0", "-1", "nan"):
        done = raf(tmp_path, "serve", "greeter.yaml", "--store-timeout", bad)
        assert done.returncode == 2, done.stderr
        assert "--store-timeout must be a number of seconds above 0" in done.stderr


def test_raf_serve_refuses_a_strategy_or_retention_it_cannot_use(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("name: a\n")
    strategy = raf(tmp_path, "serve", "a.yaml", "--port", "0", "--if-busy", "later")
    assert strategy.returncode == 2
    assert "--if-busy: invalid choice: 'later'" in strategy.stderr
    assert "reject" in strategy.stderr and "rollback" in strategy.stderr
    kept = raf(tmp_path, "serve", "a.yaml", "--port", "0", "--run-retention", "0")
    assert kept.returncode == 2
    assert "--run-retention must be a number of seconds above 0, not 0" in kept.stderr
