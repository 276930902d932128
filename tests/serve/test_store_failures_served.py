"""A served agent whose SQLite store fails (its write lock held by another connection, or
the file not a database): every surface answers 503 `session_store_error` in its own
shape, never a 400 and never the file's path; `/ready` says 503 (a held write lock
included, which reads do not see); and once the lock is gone, the session a failed run
was in is not left busy."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from raf import AgentBuilder
from raf.serve import AgentHost, create_app, serve_in_thread
from raf.stores.sessions import SqliteSessionStore
from raf.testing import ScriptedChatClient

LONG = 120.0


def serve(path: Path) -> Iterator[str]:
    agent = (
        AgentBuilder()
        .with_name("greeter")
        .with_chat_client(ScriptedChatClient(["Hello"] * 20))
        .build()
    )
    store = SqliteSessionStore(path, timeout=0.2)
    host = AgentHost([agent], store=store, lease_seconds=LONG, store_timeout=1.0)
    with serve_in_thread(create_app(host, a2a=False)) as url:
        yield url


@pytest.fixture
def url(tmp_path: Path) -> Iterator[str]:
    yield from serve(tmp_path / "private-sessions.sqlite")


def test_a_locked_store_is_a_503_on_every_surface_and_leaves_no_session_busy(
    url: str, tmp_path: Path
) -> None:
    path = tmp_path / "private-sessions.sqlite"
    with httpx.Client(base_url=url, timeout=30) as client:
        sid = client.post("/agents/greeter/sessions").json()["id"]
        blocker = sqlite3.connect(path, isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        try:
            # reads still work in WAL mode, but no write can start: not ready
            ready = client.get("/ready")
            answers = {
                "native": client.post(
                    f"/agents/greeter/sessions/{sid}/runs", json={"messages": "hi"}
                ),
                "native, new session": client.post("/agents/greeter/runs", json={"messages": "hi"}),
                "session made": client.post("/agents/greeter/sessions"),
                "responses": client.post("/v1/responses", json={"model": "greeter", "input": "hi"}),
            }
        finally:
            blocker.execute("ROLLBACK")
            blocker.close()
        assert ready.status_code == 503, ready.text
        assert ready.json()["error"]["code"] == "store_unavailable"
        assert str(tmp_path) not in ready.text
        for surface, got in answers.items():
            assert got.status_code == 503, (surface, got.text)
            error = got.json()["error"]
            if surface == "responses":  # OpenAI's shape: its code null, raf's in the message
                assert error["code"] is None, got.text
                assert error["message"].startswith("session_store_error: "), got.text
            else:
                assert error["code"] == "session_store_error", (surface, got.text)
            assert str(tmp_path) not in got.text and "sqlite" not in got.text.lower()
        assert answers["responses"].json()["error"]["type"] == "server_error"  # OpenAI's
        # the lock is gone: the session is not busy, in this process or any other
        ran = client.post(f"/agents/greeter/sessions/{sid}/runs", json={"messages": "hi"})
        assert ran.status_code == 200, ran.text
        assert client.get("/ready").status_code == 200


def test_ready_says_503_without_naming_the_store(tmp_path: Path) -> None:
    path = tmp_path / "private-sessions.sqlite"
    path.write_bytes(b"not a database " * 500)
    for url in serve(path):
        with httpx.Client(base_url=url, timeout=30) as client:
            got = client.get("/ready")
            assert got.status_code == 503, got.text
            assert got.json()["error"]["code"] == "store_unavailable"
            assert str(tmp_path) not in got.text and "database" not in got.text
            run = client.post("/agents/greeter/runs", json={"messages": "hi"})
            assert run.status_code == 503 and str(tmp_path) not in run.text
