"""Across processes: a run killed with SIGKILL resumes from its SQLite checkpoint in a
new process without re-running finished nodes; a paused run (a node's question, an agent's
tool approval) is answered from another process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

SCRIPT = Path(__file__).with_name("process_script.py")


def run(tmp_path: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "RAF_TEST_CALLS": str(tmp_path / "calls.txt"), "RAF_TEST_HANG": "0"}
    done = subprocess.run(
        [sys.executable, str(SCRIPT), args[0], str(tmp_path / "cp.sqlite"), *args[1:]],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "calls.txt").read_text().splitlines()


def test_kill_9_after_superstep_2_then_resume_in_a_new_process(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "RAF_TEST_CALLS": str(tmp_path / "calls.txt"),
        "RAF_TEST_HANG": "1",
    }
    db = tmp_path / "cp.sqlite"
    proc = subprocess.Popen(
        [sys.executable, str(SCRIPT), "chain", str(db)],
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

    resumed = run(tmp_path, "chain-resume")
    assert resumed["status"] == "completed"
    assert resumed["outputs"] == ["x>a>b>c>d"]
    assert resumed["supersteps"] == [3, 4]
    # a and b ran once: only the interrupted superstep (c) and what follows ran again.
    assert calls(tmp_path) == ["a", "b", "c", "c", "d"]


def test_a_question_is_answered_from_another_process(tmp_path: Path) -> None:
    paused = run(tmp_path, "ask")
    assert paused["status"] == "paused"
    (request,) = paused["requests"]
    assert request["node"] == "approve" and request["type"] == "bool"
    done = run(tmp_path, "answer", paused["checkpoint_id"], request["id"], "true")
    assert done == {
        **done,
        "status": "completed",
        "outputs": ["published: publish report?"],
    }
    assert calls(tmp_path) == ["ask", "answered"]


def test_a_wrong_answer_type_is_refused_and_the_checkpoint_still_resumes(tmp_path: Path) -> None:
    paused = run(tmp_path, "ask")
    (request,) = paused["requests"]
    env = {**os.environ, "RAF_TEST_CALLS": str(tmp_path / "calls.txt")}
    refused = subprocess.run(
        [
            sys.executable,
            str(SCRIPT),
            "answer",
            str(tmp_path / "cp.sqlite"),
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
    done = run(tmp_path, "answer", paused["checkpoint_id"], request["id"], "false")
    assert done["outputs"] == ["rejected: publish report?"]


def test_an_agent_tool_approval_pauses_and_resumes_across_processes(tmp_path: Path) -> None:
    paused = run(tmp_path, "agent-ask")
    assert paused["status"] == "paused"
    (request,) = paused["requests"]
    assert request["node"] == "cleaner" and request["type"] == "bool"
    assert not (tmp_path / "calls.txt").exists()  # nothing deleted before approval
    done = run(tmp_path, "agent-answer", paused["checkpoint_id"], request["id"], "true")
    assert done["status"] == "completed" and done["outputs"] == ["removed it"]
    assert calls(tmp_path) == ["delete a.txt"]
