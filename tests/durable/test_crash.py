"""A run killed with SIGKILL mid-way resumes in a new process at the step it was in:
finished tool calls (and model calls) are not repeated."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

from raf.core.contents import FunctionResultContent
from raf.durable import sqlite_url
from raf.stores.sessions import SqliteSessionStore
from tests.durable.helpers import finish, kill9, lines, start_app, stop, wait_for


def test_kill_9_after_the_second_tool_call_resumes_without_repeating(tmp_path: Path) -> None:
    database = sqlite_url(tmp_path / "dbos.sqlite")
    (tmp_path / "pause-at").write_text("3")  # the third call stops: two calls are done
    first = start_app(["start", database, str(tmp_path), "run-1"])
    try:
        wait_for(tmp_path / "reached-3")
        assert lines(tmp_path / "out.txt") == ["line 1", "line 2"]
        kill9(first)
    finally:
        stop(first)
    second = start_app(["recover", database, str(tmp_path), "run-1"])
    try:
        out = finish(second)
    finally:
        stop(second)
    assert json.loads(out.splitlines()[-1]) == {"text": "all done: line"}
    assert lines(tmp_path / "out.txt") == ["line 1", "line 2", "line 3", "line 4"]
    calls = [line.split() for line in lines(tmp_path / "model-calls.txt")]
    # five model calls in all: the three before the kill are not made again
    assert [done for _, done in calls] == ["0", "1", "2", "3", "4"]
    assert calls[0][0] == calls[2][0] != calls[3][0] == calls[4][0]
    # the session was saved once, whole: the request, four calls with their results, the answer
    session = asyncio.run(SqliteSessionStore(tmp_path / "sessions.sqlite").load("s1"))
    assert session.messages[0].text == "line"
    assert session.messages[-1].text == "all done: line"
    results = [
        c for m in session.messages for c in m.contents if isinstance(c, FunctionResultContent)
    ]
    assert [r.result for r in results] == [f"wrote line {k}" for k in range(1, 5)]
    # the third call ran twice (killed inside its step, then retried): with the same
    # idempotency key, and every other call with a key of its own
    keys = [line.split() for line in lines(tmp_path / "keys.txt")]
    assert [k[1] for k in keys] == ["1", "2", "3", "3", "4"]
    assert keys[2][2] == keys[3][2] and keys[2][2].startswith("raf-")
    assert len({k[2] for k in keys}) == 4


def test_a_killed_workflow_run_resumes_from_its_last_superstep(tmp_path: Path) -> None:
    database = sqlite_url(tmp_path / "dbos.sqlite")
    (tmp_path / "pause-at").write_text("3")
    first = start_app(["wf-start", database, str(tmp_path), "wf-1"])
    try:
        wait_for(tmp_path / "reached-3")
        assert lines(tmp_path / "out.txt") == ["line 1", "line 2"]
        kill9(first)
    finally:
        stop(first)
    second = start_app(["wf-recover", database, str(tmp_path), "wf-1"])
    try:
        out = finish(second)
    finally:
        stop(second)
    assert json.loads(out.splitlines()[-1]) == {"outputs": ["line"]}
    assert lines(tmp_path / "out.txt") == ["line 1", "line 2", "line 3", "line 4"]
