"""Two terminals appending to one stored session: `--conflict-retries` (or
$RAF_CONFLICT_RETRIES) re-applies the turn; without it the turn fails clearly."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pexpect
import pytest

from raf import ChatMessage, SqliteSessionStore

from .helpers import raf, raf_env, script, write_agent

SIMPLE = "name: helper\ninstructions: You help.\n"


def _store(tmp_path: Path) -> SqliteSessionStore:
    return SqliteSessionStore(tmp_path / "data" / "sessions.sqlite")


def _append_elsewhere(tmp_path: Path, session_id: str) -> None:
    """Another terminal's turn, saved while the command under test holds its copy."""

    async def append() -> None:
        store = _store(tmp_path)
        session = await store.load(session_id)
        session.messages += [ChatMessage.user("from B"), ChatMessage.assistant("B answer")]
        await store.save(session)

    asyncio.run(append())


def _texts(tmp_path: Path, session_id: str) -> list[str]:
    async def read() -> list[str]:
        return [m.text for m in (await _store(tmp_path).load(session_id)).messages]

    return asyncio.run(read())


def _slow_model(tmp_path: Path) -> str:
    """A reply streamed one character at a time, slowly enough to append meanwhile."""
    path = tmp_path / "slow.json"
    replies = [{"text": "A answer, slowly", "pace": 0.15}]
    path.write_text(json.dumps({"replies": replies, "chunkSize": 1}), encoding="utf-8")
    return f"scripted:{path}"


def _run_while_another_appends(tmp_path: Path, *extra: str, env: dict[str, str]) -> tuple[int, str]:
    write_agent(tmp_path, SIMPLE)
    first = raf(
        tmp_path,
        "run",
        "agent.yaml",
        "first",
        "--session",
        "s1",
        "--model",
        script(tmp_path, ["one"]),
    )
    assert first.returncode == 0, first.stderr
    proc = subprocess.Popen(
        [
            *(sys.executable, "-m", "raf.cli", "run", "agent.yaml", "from A", "--session", "s1"),
            *("--json", "--model", _slow_model(tmp_path), *extra),
        ],
        cwd=tmp_path,
        env={**raf_env(tmp_path), **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        assert json.loads(proc.stdout.readline())["kind"] == "text_delta"  # it holds its copy
        _append_elsewhere(tmp_path, "s1")
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, err


@pytest.mark.parametrize(
    ("extra", "env"),
    [(("--conflict-retries", "2"), {}), ((), {"RAF_CONFLICT_RETRIES": "2"})],
    ids=["flag", "env"],
)
def test_run_re_applies_its_turn(tmp_path: Path, extra: tuple[str, ...], env: dict[str, str]):
    code, err = _run_while_another_appends(tmp_path, *extra, env=env)
    assert code == 0, err
    assert _texts(tmp_path, "s1") == [
        "first",
        "one",
        "from B",
        "B answer",
        "from A",
        "A answer, slowly",
    ]


def test_run_without_retries_fails_and_keeps_the_other_turn(tmp_path: Path):
    code, err = _run_while_another_appends(tmp_path, env={})
    assert code == 1
    assert "session 's1'" in err and "was saved elsewhere" in err
    assert "--conflict-retries N" in err and "RAF_CONFLICT_RETRIES" in err
    assert _texts(tmp_path, "s1") == ["first", "one", "from B", "B answer"]


def test_a_bad_setting_is_a_clear_error(tmp_path: Path):
    write_agent(tmp_path, SIMPLE)
    model = script(tmp_path, ["x"])
    done = raf(
        tmp_path, "run", "agent.yaml", "hi", "--model", model, env={"RAF_CONFLICT_RETRIES": "x"}
    )
    assert done.returncode == 1
    assert "$RAF_CONFLICT_RETRIES must be a whole number 0 or more, got 'x'" in done.stderr
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--model", model, "--conflict-retries", "-1")
    assert done.returncode == 1 and "--conflict-retries must be 0 or more" in done.stderr


@pytest.mark.parametrize("retries", [True, False], ids=["retries", "none"])
def test_chat_in_two_terminals(tmp_path: Path, retries: bool):
    write_agent(tmp_path, SIMPLE)
    first = raf(
        tmp_path,
        "run",
        "agent.yaml",
        "first",
        "--session",
        "s1",
        "--model",
        script(tmp_path, ["one"]),
    )
    assert first.returncode == 0, first.stderr
    model = script(tmp_path, ["chat answer", "second answer"], name="chat.json")
    extra = ["--conflict-retries", "3"] if retries else []
    child = pexpect.spawn(
        sys.executable,
        ["-m", "raf.cli", "chat", "agent.yaml", "--resume", "s1", "--model", model, *extra],
        cwd=str(tmp_path),
        env=raf_env(tmp_path),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    try:
        child.expect("resumed session s1")
        child.expect("you> ")
        _append_elsewhere(tmp_path, "s1")  # another terminal's turn
        child.sendline("from chat")
        if retries:
            child.expect("chat answer")
            child.expect("you> ")
            expected = ["first", "one", "from B", "B answer", "from chat", "chat answer"]
        else:
            child.expect("was saved elsewhere")
            child.expect("reloaded the stored session: 4 messages")
            child.expect("you> ")
            child.sendline("again")  # the reloaded copy is current: this turn is stored
            child.expect("second answer")  # the failed turn used the model's first reply
            child.expect("you> ")
            expected = ["first", "one", "from B", "B answer", "again", "second answer"]
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)
    assert _texts(tmp_path, "s1") == expected
