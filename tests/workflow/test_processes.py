"""Across processes: a run killed with SIGKILL resumes from its checkpoint (SQLite or
PostgreSQL) in a new process without re-running finished nodes; a paused run (a node's
question, an agent's tool approval) is answered from another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("process_script.py")


def run(tmp_path: Path, db: str, *args: str) -> dict[str, Any]:
    env = {**os.environ, "RAF_TEST_CALLS": str(tmp_path / "calls.txt"), "RAF_TEST_HANG": "0"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), args[0], db, *args[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


@pytest.fixture(params=["sqlite", "postgres"])
def db(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where the checkpoints live: a SQLite file, or a table of the test PostgreSQL."""
    if request.param == "sqlite":
        return str(tmp_path / "cp.sqlite")
    url: str = request.getfixturevalue("postgres_server").url
    return f"{url}#cp_{uuid.uuid4().hex[:12]}"


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls.txt").read_text().splitlines()


def test_kill_9_after_superstep_2_then_resume_in_a_new_process(tmp_path: Path, db: str) -> None:
    env = {
        **os.environ,
        "RAF_TEST_CALLS": str(tmp_path / "calls.txt"),
        "RAF_TEST_HANG": "1",
    }
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "chain", db],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if (tmp_path / "calls.txt").exists() and "c" in calls(tmp_path):
                break
            assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
            time.sleep(0.02)
        else:
            raise AssertionError("node c never started")
    finally:
        proc.kill()  # SIGKILL: no clean-up, no final checkpoint
        proc.wait(timeout=10)
    assert proc.returncode == -9
    assert calls(tmp_path) == ["a", "b", "c"]

    resumed = run(tmp_path, db, "chain-resume")
    assert resumed["status"] == "completed"
    assert resumed["outputs"] == ["x>a>b>c>d"]
    assert resumed["supersteps"] == [3, 4]
    # a and b ran once: only the interrupted superstep (c) and what follows ran again.
    assert calls(tmp_path) == ["a", "b", "c", "c", "d"]


def test_a_question_is_answered_from_another_process(tmp_path: Path, db: str) -> None:
    paused = run(tmp_path, db, "ask")
    assert paused["status"] == "paused"
    (request,) = paused["requests"]
    assert request["node"] == "approve" and request["type"] == "bool"
    done = run(tmp_path, db, "answer", paused["checkpoint_id"], request["id"], "true")
    assert done == {
        **done,
        "status": "completed",
        "outputs": ["published: publish report?"],
    }
    assert calls(tmp_path) == ["ask", "answered"]


def answer_together(tmp_path: Path, db: str, n: int, *args: str) -> list[dict[str, Any]]:
    """Start `n` processes that answer at the same moment; what each printed."""
    go = tmp_path / "go"
    env = {**os.environ, "RAF_TEST_CALLS": str(tmp_path / "calls.txt"), "RAF_TEST_GO": str(go)}
    procs = [
        subprocess.Popen(
            [sys.executable, str(SCRIPT), "answer", db, *args],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(n)
    ]
    try:
        deadline = time.monotonic() + 60
        while len(list(tmp_path.glob("go.ready.*"))) < n:
            assert time.monotonic() < deadline, "the answering processes never got ready"
            assert all(p.poll() is None for p in procs), [p.communicate() for p in procs]
            time.sleep(0.01)
        go.touch()
        outs = [p.communicate(timeout=60) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
    for p, (_, err) in zip(procs, outs, strict=True):
        assert p.returncode == 0, err
    return [json.loads(out.strip().splitlines()[-1]) for out, _ in outs]


def test_two_processes_answering_one_checkpoint_run_the_node_once(tmp_path: Path, db: str) -> None:
    paused = run(tmp_path, db, "ask")
    (request,) = paused["requests"]
    args = (paused["checkpoint_id"], request["id"], "true")
    results = answer_together(tmp_path, db, 2, *args)
    assert sorted(r["status"] for r in results) == ["completed", "refused"]
    assert calls(tmp_path) == ["ask", "answered"]
    (refusal,) = [r for r in results if r["status"] == "refused"]
    assert (
        f"request {request['id']!r} of checkpoint {paused['checkpoint_id']!r}" in (refusal["error"])
    )
    assert "already answered" in refusal["error"]

    late = run(tmp_path, db, "answer", *args)  # a third answer, after the run completed
    assert late["status"] == "refused"
    assert "already answered" in late["error"]
    assert calls(tmp_path) == ["ask", "answered"]


def test_a_wrong_answer_type_is_refused_and_the_checkpoint_still_resumes(
    tmp_path: Path, db: str
) -> None:
    paused = run(tmp_path, db, "ask")
    (request,) = paused["requests"]
    env = {**os.environ, "RAF_TEST_CALLS": str(tmp_path / "calls.txt")}
    refused = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "answer",
            db,
            paused["checkpoint_id"],
            request["id"],
            '"sure"',
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert refused.returncode != 0
    assert "must be bool, not str" in refused.stderr
    done = run(tmp_path, db, "answer", paused["checkpoint_id"], request["id"], "false")
    assert done["outputs"] == ["rejected: publish report?"]


def test_an_agent_tool_approval_pauses_and_resumes_across_processes(
    tmp_path: Path, db: str
) -> None:
    paused = run(tmp_path, db, "agent-ask")
    assert paused["status"] == "paused"
    (request,) = paused["requests"]
    assert request["node"] == "cleaner" and request["type"] == "bool"
    assert not (tmp_path / "calls.txt").exists()  # nothing deleted before approval
    done = run(tmp_path, db, "agent-answer", paused["checkpoint_id"], request["id"], "true")
    assert done["status"] == "completed" and done["outputs"] == ["removed it"]
    assert calls(tmp_path) == ["delete a.txt"]
