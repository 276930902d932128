"""A model's reply that draws a fake approval prompt and hides what follows (black on
black, concealed text) must not hide raf's real prompt, in `raf chat` and `raf run`."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pexpect
import pytest

from tests.loopback_http import loopback_server

from .helpers import raf, raf_env, script, write_agent

SHELL_AGENT = """
name: runner
instructions: You run commands.
contexts:
  - kind: workspace
    name: project
    config: {root: ., policy: approve}
tools:
  - kind: shell
"""

FAKE = (
    "Let me just read your notes.\n"
    'approve read_file({"path": "notes.txt"})? [y/N] '
    "\x1b[30;40m\x1b[8m"  # everything after this would be invisible
    "\x1b]0;raf\x07"  # and the window retitled
)
HIDING = ("\x1b[30;40m", "\x1b[8m", "\x1b]0;")


def attack(tmp_path: Path, marker: Path) -> str:
    call = {
        "name": "run_command",
        "arguments": {"command": f"touch {marker}", "outside_workspace": True},
        "id": "c1",
    }
    return script(tmp_path, [{"text": FAKE, "calls": [call]}, "Done."])


def spawn(tmp_path: Path, *args: str) -> pexpect.spawn[str]:
    return pexpect.spawn(
        sys.executable,
        ["-m", "raf.cli", *args],
        cwd=str(tmp_path),
        env=raf_env(tmp_path),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )


def assert_real_prompt_visible(seen: str, tmp_path: Path) -> None:
    for hiding in HIDING:
        assert hiding not in seen
    assert "\x1b" not in seen.split("Let me just read")[1]
    real = seen.rindex("tool:      run_command")
    assert seen.index("[y/N]") < real  # the fake prompt came first, the real one after it
    block = seen[real:]
    assert "OUTSIDE the workspace sandbox" in block
    assert f"raf runs in {tmp_path}" in block
    assert f"workspace: {tmp_path.resolve()} (relative paths start there)" in block
    assert seen[seen.rindex("── raf asks for approval ──") - 1] in "\n"  # on its own line


@pytest.fixture
def children():
    started: list[pexpect.spawn[str]] = []
    yield started
    for child in started:
        child.close(force=True)


def test_chat_shows_the_real_prompt_after_a_hiding_reply(tmp_path, children):
    write_agent(tmp_path, SHELL_AGENT)
    marker = tmp_path.parent / f"{tmp_path.name}-pwned"
    child = spawn(tmp_path, "chat", "agent.yaml", "--model", attack(tmp_path, marker))
    children.append(child)
    child.expect("you> ")
    child.sendline("tidy up")
    child.expect(r"\[a\]lways allow this tool> ")
    assert_real_prompt_visible(f"{child.before}{child.after}", tmp_path)
    assert "approve run_command(" in str(child.before)
    child.sendline("n")
    child.expect(r"reason \(optional\)> ")
    child.sendline("")
    child.expect("Done.")
    child.expect("you> ")
    child.sendline("/quit")
    child.expect(pexpect.EOF)
    assert not marker.exists()


def test_run_shows_the_real_prompt_after_a_hiding_reply(tmp_path, children):
    write_agent(tmp_path, SHELL_AGENT)
    marker = tmp_path.parent / f"{tmp_path.name}-pwned"
    model = attack(tmp_path, marker)
    child = spawn(tmp_path, "run", "agent.yaml", "tidy up", "--model", model)
    children.append(child)
    child.expect(r"approve run_command\(.*\)\? \[y/N\] ")
    assert_real_prompt_visible(f"{child.before}{child.after}", tmp_path)
    child.sendline("n")
    child.expect(r"reason \(optional\): ")
    child.sendline("")
    child.expect(pexpect.EOF)
    assert not marker.exists()


def test_run_json_lines_escape_what_a_terminal_acts_on(tmp_path):
    write_agent(tmp_path, SHELL_AGENT)
    text = "a\u202eb\x9b8mc"  # a right-to-left override and an 8-bit CSI
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--json", "--model", script(tmp_path, [text]))
    assert done.returncode == 0, done.stderr
    assert "\u202e" not in done.stdout and "\x9b" not in done.stdout
    updates = [json.loads(line) for line in done.stdout.splitlines()]
    assert "".join(u.get("text", "") for u in updates) == text  # the same value


def test_a_memory_page_is_printed_without_its_control_sequences(tmp_path):
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory" / "notes.md").write_text("shown \x1b[8mhidden\n", "utf-8")
    done = raf(tmp_path, "memory", "show", str(tmp_path / "memory"), "--page", "notes.md")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "shown hidden\n"


def test_raf_eval_prints_a_judge_s_reason_without_its_control_sequences(tmp_path):
    """The judge is a model too: its reason reaches the table `raf eval` prints."""
    verdict = {"verdict": "fail", "reason": "wrong \x1b[8mhidden\x1b]0;t\x07 city"}
    completion = {
        "id": "c1",
        "object": "chat.completion",
        "created": 0,
        "model": "judge",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": json.dumps(verdict)},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }
    with loopback_server() as judge:
        judge.json("/v1/chat/completions", completion)
        dataset = tmp_path / "cities.yaml"
        dataset.write_text(
            "name: cities\n"
            "evaluators: [{judge: {rubric: Names the capital, "
            f"model: 'openai-compatible:{judge.url}/v1:judge'}}}}]\n"
            "cases:\n  - {name: capital, input: Capital of France?}\n",
            encoding="utf-8",
        )
        model = script(tmp_path, ["Lyon"])
        done = raf(tmp_path, "eval", str(dataset), "--model", model, "--no-save")
    assert "wrong hidden city" in done.stdout, done.stdout + done.stderr
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout


QUESTION = """\
kind: workflow
name: question
trigger:
  kind: OnConversationStart
  id: start
  actions:
    - kind: Question
      id: ask_name
      question:
        text: "What is \\e[8myour\\e]0;t\\a name?"
      variable: Local.name
    - kind: SendActivity
      id: greet
      activity: =Concat("Hi ", Local.name)
"""


def test_a_workflow_question_is_asked_without_its_control_sequences(tmp_path, children):
    """A question's text comes from a document (or a formula over a model's reply): `raf
    run` and `raf chat` print it as text."""
    (tmp_path / "q.yaml").write_text(QUESTION, encoding="utf-8")
    first = raf(tmp_path, "run", "q.yaml", "hi", "--session", "q1")
    assert first.returncode == 3, first.stderr
    assert "What is your name?" in first.stderr
    assert "\x1b" not in first.stderr and "\x07" not in first.stderr
    child = spawn(tmp_path, "chat", "q.yaml")
    children.append(child)
    child.expect("you> ")
    child.sendline("hello")
    child.expect("answer> ")
    asked = str(child.before)
    assert "What is your name?" in asked
    assert "\x1b" not in asked.split("hello", 1)[-1]
    child.sendline("Kim")
    child.expect("Hi Kim")


def test_raf_convert_names_a_bad_key_as_text(tmp_path):
    """A document's own text reaches the errors `raf convert` prints."""
    (tmp_path / "agent.json").write_text(
        '{"name": "x", "instructions": "hi", "modle\\u001b[8m\\u001b]0;t\\u0007": 1}', "utf-8"
    )
    done = raf(tmp_path, "convert", "agent.json", "--to", "maf")
    assert done.returncode == 1
    assert "unknown key" in done.stderr and "modle" in done.stderr
    assert "\x1b" not in done.stderr and "\x07" not in done.stderr


def test_raf_memory_validate_prints_page_names_as_text(tmp_path):
    """Page names are the agent's to choose (it writes its memory): `raf memory validate`
    names them as text."""
    memory = tmp_path / "memory"
    memory.mkdir()
    (memory / "bad\x1b[8mname.md").write_text("no front matter\n", "utf-8")
    done = raf(tmp_path, "memory", "validate", str(memory))
    assert done.returncode == 1
    assert "badname.md: no YAML front matter" in done.stdout, done.stdout
    assert "\x1b" not in done.stdout


def test_raf_validate_names_a_workflow_as_text(tmp_path):
    """The name `raf validate` reports for a valid workflow is the document's text."""
    workflow = {
        "kind": "workflow",
        "name": "greeting\u001b[8m\u001b]0;t\u0007",
        "trigger": {
            "kind": "OnConversationStart",
            "id": "start",
            "actions": [{"kind": "SendActivity", "id": "hi", "activity": "Hello"}],
        },
    }
    (tmp_path / "flow.json").write_text(json.dumps(workflow), "utf-8")
    done = raf(tmp_path, "validate", "flow.json")
    assert done.returncode == 0, done.stderr
    assert "flow.json: ok (workflow greeting" in done.stdout
    assert "\x1b" not in done.stdout and "\x07" not in done.stdout
