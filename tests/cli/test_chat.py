"""`raf chat` driven in a pseudo-terminal: typing, streaming, approvals, Ctrl-C, --resume."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import pexpect
import pytest

from .helpers import APPROVING_AGENT, raf_env, script, write_agent

PROMPT = "you> "
TIMEOUT = 30


def spawn(tmp_path: Path, *args: str) -> pexpect.spawn[str]:
    child = pexpect.spawn(
        sys.executable,
        ["-m", "raf.cli", "chat", *args],
        cwd=str(tmp_path),
        env=raf_env(tmp_path),
        encoding="utf-8",
        timeout=TIMEOUT,
        dimensions=(40, 200),
    )
    return child


@pytest.fixture
def chats():
    started: list[pexpect.spawn[str]] = []
    yield started
    for child in started:
        if child.isalive():
            child.terminate(force=True)


def matched(child: pexpect.spawn[str]) -> str:
    match = child.match
    assert isinstance(match, re.Match)
    return str(match.group(1))


def outside(tmp_path: Path) -> str:
    path = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    path.write_text("outside text", encoding="utf-8")
    return str(path)


def read_call(path: str, call_id: str) -> dict[str, object]:
    return {"calls": [{"name": "read_file", "arguments": {"path": path}, "id": call_id}]}


def test_typing_gets_a_streamed_answer(tmp_path, chats):
    answer = "Streaming arrives piece by piece here."
    model = script(tmp_path, [{"text": answer, "pace": 0.15}])
    child = spawn(tmp_path, "--model", model)
    chats.append(child)
    child.expect("raf chat — assistant")
    child.expect(PROMPT)
    child.sendline("hello")
    child.expect("Stre")
    seen_early = f"{child.before}{child.after}"
    time.sleep(0.05)
    assert answer not in seen_early  # the first piece came before the whole answer
    child.expect("here.")
    child.expect(PROMPT)
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_commands_help_session_clear_model(tmp_path, chats):
    child = spawn(tmp_path, "--model", script(tmp_path, ["hi"]))
    chats.append(child)
    child.expect(PROMPT)
    child.sendline("/help")
    child.expect("/resume|/clear")
    child.expect(PROMPT)
    child.sendline("/session")
    child.expect(r"session ([0-9a-f]{32}) \(0 messages\)")
    first = matched(child)
    child.expect(PROMPT)
    child.sendline("/clear")
    child.expect(r"new session ([0-9a-f]{32})")
    assert matched(child) != first
    child.expect(PROMPT)
    child.sendline("/model")
    child.expect("model: scripted:")
    child.expect(PROMPT)
    child.sendline("/model " + script(tmp_path, ["from the second model"], "second.json"))
    child.expect("model: scripted:.*second.json")
    child.expect(PROMPT)
    child.sendline("hello")
    child.expect("from the second model")
    child.expect(PROMPT)
    child.sendline("/nope")
    child.expect("unknown command /nope")
    child.expect(PROMPT)
    child.sendeof()
    child.expect(pexpect.EOF)


def test_approval_prompt_approve_then_deny_with_reason(tmp_path, chats):
    write_agent(tmp_path, APPROVING_AGENT)
    path = outside(tmp_path)
    model = script(
        tmp_path,
        [read_call(path, "c1"), "It says outside text.", read_call(path, "c2"), "Fine, I won't."],
    )
    child = spawn(tmp_path, "agent.yaml", "--model", model)
    chats.append(child)
    child.expect(PROMPT)
    child.sendline("read the outside file")
    child.expect("⚙ read_file")
    child.expect("approve read_file")
    child.expect(r"\[y\]es / \[n\]o / \[a\]lways allow this tool> ")
    child.sendline("y")
    child.expect("↳ read_file: {")
    child.expect("It says outside text.")
    child.expect(PROMPT)
    child.sendline("again please")
    child.expect(r"\[a\]lways allow this tool> ")
    child.sendline("n")
    child.expect("reason \\(optional\\)> ")
    child.sendline("private file")
    child.expect("read_file failed: the user denied this call: private file")
    child.expect("Fine, I won't.")
    child.expect(PROMPT)
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_always_allow_skips_the_next_prompt(tmp_path, chats):
    write_agent(tmp_path, APPROVING_AGENT)
    path = outside(tmp_path)
    model = script(tmp_path, [read_call(path, "c1"), "one", read_call(path, "c2"), "two"])
    child = spawn(tmp_path, "agent.yaml", "--model", model)
    chats.append(child)
    child.expect(PROMPT)
    child.sendline("read")
    child.expect(r"\[a\]lways allow this tool> ")
    child.sendline("a")
    child.expect("one")
    child.expect(PROMPT)
    child.sendline("read again")
    child.expect("read_file is always allowed in this session")
    child.expect("two")
    child.expect(PROMPT)
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_ctrl_c_cancels_the_run_not_the_program(tmp_path, chats):
    model = script(tmp_path, [{"text": "too slow", "delay": 30}, "still here"])
    child = spawn(tmp_path, "--model", model)
    chats.append(child)
    child.expect(PROMPT)
    child.sendline("take your time")
    time.sleep(1.5)
    child.sendintr()
    child.expect(r"\(cancelled\)")
    child.expect(PROMPT)
    child.sendline("are you there?")
    child.expect("still here")
    child.expect(PROMPT)
    assert child.isalive()
    child.sendintr()  # at the prompt: a hint, not an exit
    child.expect("cancels a running answer")
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_resume_continues_the_stored_session(tmp_path, chats):
    first = spawn(tmp_path, "--model", script(tmp_path, ["Nice to meet you, Ada."]))
    chats.append(first)
    first.expect(r"session ([0-9a-f]{32})")
    session_id = matched(first)
    first.expect(PROMPT)
    first.sendline("my name is Ada")
    first.expect("Nice to meet you, Ada.")
    first.expect(PROMPT)
    first.sendline("/quit")
    first.expect(pexpect.EOF)

    model = script(tmp_path, ["You are Ada."], name="second.json")
    second = spawn(tmp_path, "--resume", "--model", model)
    chats.append(second)
    second.expect(f"resumed session {session_id} \\(2 messages\\)")
    second.expect("user: my name is Ada")
    second.expect(PROMPT)
    second.sendline("who am I?")
    second.expect("You are Ada.")
    second.expect(PROMPT)
    second.sendline("/quit")
    second.expect(pexpect.EOF)

    third = spawn(tmp_path, "--resume", session_id, "--model", script(tmp_path, [], "3.json"))
    chats.append(third)
    third.expect(f"resumed session {session_id} \\(4 messages\\)")
    third.sendline("/quit")
    third.expect(pexpect.EOF)


def test_an_approval_left_with_ctrl_c_is_asked_again_before_the_next_message(tmp_path, chats):
    write_agent(tmp_path, APPROVING_AGENT)
    path = outside(tmp_path)
    model = script(tmp_path, [read_call(path, "c1"), "It says outside text.", "Second answer."])
    child = spawn(tmp_path, "agent.yaml", "--model", model)
    chats.append(child)
    child.expect(PROMPT)
    child.sendline("read the outside file")
    child.expect(r"\[a\]lways allow this tool> ")
    time.sleep(0.3)
    child.sendintr()
    child.expect(r"\(left waiting for approval: your next message asks again")
    child.expect(PROMPT)
    child.sendline("and now?")
    child.expect(r"still waits for approval; answer it first")
    child.expect(r"\[a\]lways allow this tool> ")
    child.sendline("y")
    child.expect("It says outside text.")
    child.expect("Second answer.")  # the new message was sent after the approval
    child.expect(PROMPT)
    child.sendline("/quit")
    child.expect(pexpect.EOF)


def test_a_broken_document_exits_1_with_its_problems_and_leaks_nothing(tmp_path):
    import subprocess

    write_agent(tmp_path, "name: a\nmaxToolRound: 3\n")
    done = subprocess.run(
        [sys.executable, "-W", "error::ResourceWarning", "-m", "raf.cli", "chat", "agent.yaml"],
        cwd=tmp_path,
        env=raf_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
    )
    assert done.returncode == 1
    assert "agent.yaml:2:1 maxToolRound: unknown key 'maxToolRound'" in done.stderr
    assert "ResourceWarning" not in done.stderr


def test_without_a_file_or_a_key_the_default_assistant_uses_the_local_model(tmp_path, chats):
    child = spawn(tmp_path)  # no FILE, no --model; raf_env drops RAF_MODEL
    chats.append(child)
    child.expect("raf chat — assistant")
    child.expect(PROMPT)
    child.sendline("/model")  # the local model loads lazily: nothing is generated here
    child.expect(r"model: default \(LocalChatClient\(")
    child.expect(PROMPT)
    child.sendline("/quit")
    child.expect(pexpect.EOF)
