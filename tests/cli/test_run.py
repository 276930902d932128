"""`raf run`, `raf validate` and `raf schema` as a user runs them: in a subprocess."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

from .helpers import APPROVING_AGENT, raf, raf_env, script, write_agent

SIMPLE = "name: helper\ninstructions: You help.\n"


def outside_file(tmp_path: Path) -> Path:
    path = tmp_path.parent / f"{tmp_path.name}-outside.txt"
    path.write_text("outside text", encoding="utf-8")
    return path


def read_outside_script(tmp_path: Path, final: str = "It says: outside text") -> str:
    return script(
        tmp_path,
        [
            {
                "calls": [
                    {
                        "name": "read_file",
                        "arguments": {"path": str(outside_file(tmp_path))},
                        "id": "c1",
                    }
                ]
            },
            final,
        ],
    )


def test_run_prints_the_answer(tmp_path):
    write_agent(tmp_path, SIMPLE)
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--model", script(tmp_path, ["Hello there!"]))
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello there!\n"


def test_run_json_prints_the_stream_as_json_lines(tmp_path):
    write_agent(tmp_path, SIMPLE)
    model = script(tmp_path, ["Hello there!"])
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--json", "--model", model)
    assert done.returncode == 0, done.stderr
    updates = [json.loads(line) for line in done.stdout.splitlines()]
    assert "".join(u.get("text", "") for u in updates if u["kind"] == "text_delta") == (
        "Hello there!"
    )
    assert updates[-1] == {"kind": "finished", "finish_reason": "stop"}


def test_run_reads_the_prompt_from_stdin(tmp_path):
    write_agent(tmp_path, SIMPLE)
    model = script(tmp_path, ["got it"])
    done = raf(tmp_path, "run", "agent.yaml", "-", "--model", model, stdin="a long prompt\n")
    assert done.returncode == 0 and done.stdout == "got it\n"


def test_run_approve_all_runs_the_call(tmp_path):
    write_agent(tmp_path, APPROVING_AGENT)
    model = read_outside_script(tmp_path)
    done = raf(tmp_path, "run", "agent.yaml", "read it", "--approve", "all", "--model", model)
    assert done.returncode == 0, done.stderr
    assert "It says: outside text" in done.stdout
    assert "⚙ read_file(" in done.stderr and "↳ read_file: {" in done.stderr


def test_run_approve_none_denies_the_call(tmp_path):
    write_agent(tmp_path, APPROVING_AGENT)
    model = read_outside_script(tmp_path, "I was not allowed")
    done = raf(tmp_path, "run", "agent.yaml", "read it", "--approve", "none", "--model", model)
    assert done.returncode == 0, done.stderr
    assert "denied by --approve none" in done.stderr


def test_unanswered_approval_exits_3_and_resumes_by_session(tmp_path):
    write_agent(tmp_path, APPROVING_AGENT)
    model = read_outside_script(tmp_path)
    first = raf(tmp_path, "run", "agent.yaml", "read it", "--session", "s1", "--model", model)
    assert first.returncode == 3, first.stderr
    assert "waiting for approval: read_file(" in first.stderr
    assert "--session s1" in first.stderr
    # the script's first reply was used; a fresh process replays from the second one
    model = script(tmp_path, ["It says: outside text"], name="rest.json")
    second = raf(
        tmp_path, "run", "agent.yaml", "--session", "s1", "--approve", "all", "--model", model
    )
    assert second.returncode == 0, second.stderr
    assert "It says: outside text" in second.stdout


def test_usage_errors_exit_2(tmp_path):
    assert raf(tmp_path, "run").returncode == 2
    write_agent(tmp_path, SIMPLE)
    done = raf(tmp_path, "run", "agent.yaml", "--model", script(tmp_path, ["x"]))
    assert done.returncode == 2 and "give a prompt" in done.stderr


def test_a_broken_document_exits_1_with_located_problems(tmp_path):
    write_agent(tmp_path, "name: a\nmaxToolRound: 3\n")
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--model", script(tmp_path, ["x"]))
    assert done.returncode == 1
    assert "agent.yaml:2:1 maxToolRound: unknown key 'maxToolRound'; did you mean" in done.stderr


def test_ctrl_c_interrupts_the_run_with_130(tmp_path):
    """Ctrl-C once the run has started (raf says it starts a new session just before):
    however slow the machine is to get there, the signal lands in the run."""
    write_agent(tmp_path, SIMPLE)
    model = script(tmp_path, [{"text": "too late", "delay": 60}])
    command = ["run", "agent.yaml", "hi", "--session", "s1", "--model", model]
    process = subprocess.Popen(
        [sys.executable, "-m", "raf.cli", *command],
        cwd=tmp_path,
        env=raf_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    watchdog = threading.Timer(120, process.kill)
    watchdog.start()
    try:
        assert process.stderr is not None
        first = process.stderr.readline()
        assert "starting a new one" in first, first
        time.sleep(0.5)
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    finally:
        watchdog.cancel()
        process.kill()
    assert process.returncode == 130, err
    assert "interrupted" in err and "too late" not in out


INTERRUPT_WHILE_IMPORTING = """
import os, signal, sys
import raf.cli.main as program

real = program.importlib.import_module

def import_module(name, *args):
    if name == "raf.cli.run":  # Ctrl-C while the command modules are still importing
        os.kill(os.getpid(), signal.SIGINT)
    return real(name, *args)

program.importlib.import_module = import_module
sys.exit(program.main(sys.argv[1:]))
"""


def test_ctrl_c_while_raf_is_still_importing_exits_130_without_a_traceback(tmp_path):
    write_agent(tmp_path, SIMPLE)
    done = subprocess.run(
        [sys.executable, "-c", INTERRUPT_WHILE_IMPORTING, "run", "agent.yaml", "hi"],
        cwd=tmp_path,
        env=raf_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr == "raf: interrupted\n"


def test_validate_reports_every_problem_and_exits_1(tmp_path):
    write_agent(tmp_path, SIMPLE, "good.yaml")
    write_agent(tmp_path, "name: a\nmaxToolRound: 3\ntools:\n  - kind: fil\n", "bad.yaml")
    done = raf(tmp_path, "validate", "good.yaml", "bad.yaml")
    assert done.returncode == 1
    assert "good.yaml: ok (helper)" in done.stdout
    assert "bad.yaml: 2 problem(s)" in done.stderr
    assert "bad.yaml:2:1 maxToolRound: unknown key 'maxToolRound'" in done.stderr
    assert "bad.yaml:4:11 tools[0].kind: unknown tool kind 'fil'; did you mean 'file'?" in (
        done.stderr
    )


def test_validate_warns_about_an_unknown_policy_and_passes(tmp_path):
    write_agent(tmp_path, "name: a\ncontexts:\n  - kind: workspace\n    config: {policy: maybe}\n")
    done = raf(tmp_path, "validate", "agent.yaml")
    assert done.returncode == 0
    assert "warning: agent.yaml:4:22 contexts[0].config.policy: unknown workspace policy" in (
        done.stderr
    )
    assert "failing closed to 'deny'" in done.stderr


def test_schema_prints_the_json_schema(tmp_path):
    done = raf(tmp_path, "schema")
    assert done.returncode == 0
    schema = json.loads(done.stdout)
    assert "maxToolRounds" in schema["properties"]


def spawn_run(tmp_path: Path, *args: str):
    import pexpect

    return pexpect.spawn(
        sys.executable,
        ["-m", "raf.cli", "run", *args],
        cwd=str(tmp_path),
        env=raf_env(tmp_path),
        encoding="utf-8",
        timeout=30,
    )


def test_approve_ask_on_a_terminal_yes_then_no_with_a_reason(tmp_path):
    import pexpect

    write_agent(tmp_path, APPROVING_AGENT)
    child = spawn_run(tmp_path, "agent.yaml", "read it", "--model", read_outside_script(tmp_path))
    try:
        child.expect(r"approve read_file\(.*\)\? \[y/N\] ")
        child.sendline("y")
        child.expect("It says: outside text")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0
    model = read_outside_script(tmp_path, "Not read.")
    child = spawn_run(tmp_path, "agent.yaml", "read it", "--model", model)
    try:
        child.expect(r"\[y/N\] ")
        child.sendline("n")
        child.expect("reason \\(optional\\): ")
        child.sendline("private")
        child.expect("the user denied this call: private")
        child.expect("Not read.")
        child.expect(pexpect.EOF)
    finally:
        child.close(force=True)
    assert child.exitstatus == 0


def test_ctrl_c_at_the_approval_prompt_exits_130_and_the_session_can_resume(tmp_path):
    import pexpect

    write_agent(tmp_path, APPROVING_AGENT)
    model = read_outside_script(tmp_path)
    child = spawn_run(tmp_path, "agent.yaml", "read it", "--session", "s2", "--model", model)
    try:
        child.expect(r"\[y/N\] ")
        time.sleep(0.3)
        child.sendintr()
        child.expect(r"interrupted \(session s2 waits for approval\)", timeout=10)
        child.expect(pexpect.EOF, timeout=10)
    finally:
        child.close(force=True)
    assert child.exitstatus == 130
    model = script(tmp_path, ["It says: outside text"], name="rest.json")
    done = raf(
        tmp_path, "run", "agent.yaml", "--session", "s2", "--approve", "all", "--model", model
    )
    assert done.returncode == 0, done.stderr
    assert "It says: outside text" in done.stdout


def test_raf_session_store_names_a_postgresql_store(tmp_path, postgres_server):
    write_agent(tmp_path, SIMPLE)
    env = {"RAF_SESSION_STORE": postgres_server.url}
    model = script(tmp_path, ["first answer"])
    first = raf(
        tmp_path, "run", "agent.yaml", "hello", "--session", "pg1", "--model", model, env=env
    )
    assert first.returncode == 0, first.stderr
    assert not (tmp_path / "data" / "sessions.sqlite").exists()  # not the default store
    model = script(tmp_path, ["second answer"], name="second.json")
    again = raf(
        tmp_path, "run", "agent.yaml", "again", "--session", "pg1", "--model", model, env=env
    )
    assert again.returncode == 0, again.stderr
    import asyncio

    from raf import PostgresSessionStore

    async def texts() -> list[str]:
        store = PostgresSessionStore(postgres_server.url)
        try:
            return [m.text for m in (await store.load("pg1")).messages]
        finally:
            await store.close()

    assert asyncio.run(texts()) == ["hello", "first answer", "again", "second answer"]


def test_an_unreachable_session_store_is_a_clear_error(tmp_path):
    from tests.servers import free_port

    write_agent(tmp_path, SIMPLE)
    port = free_port()
    env = {"RAF_SESSION_STORE": f"postgresql://raf:hunter2@127.0.0.1:{port}/raf"}
    model = script(tmp_path, ["never seen"])
    done = raf(tmp_path, "run", "agent.yaml", "hello", "--session", "x", "--model", model, env=env)
    assert done.returncode != 0
    assert f"PostgreSQL session store at postgresql://raf@127.0.0.1:{port}/raf" in done.stderr
    assert "hunter2" not in done.stderr and "Traceback" not in done.stderr


def test_an_answer_cut_at_the_token_limit_says_so() -> None:
    """Without the note, half an answer (or none, when a call was cut) reads as whole."""
    import io

    from raf.cli._render import StreamPrinter
    from raf.core.responses import ANSWER_PROBLEMS, AgentResponseUpdate, FinishReason, UpdateKind

    out, info = io.StringIO(), io.StringIO()
    printer = StreamPrinter(out, info)
    for reason in (FinishReason.STOP, FinishReason.LENGTH):
        printer.show(AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id="m", text="Tide"))
        printer.show(AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=reason))
    printer.show(AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=FinishReason.STOP))
    assert out.getvalue() == "Tide\nTide\n"
    assert info.getvalue() == (
        f"({ANSWER_PROBLEMS['cut_off']})\n({ANSWER_PROBLEMS['empty_answer']})\n"
    )


def test_a_warning_during_an_answer_gets_a_line_of_its_own() -> None:
    """The local model stopped for repeating itself warns while its answer is on screen."""
    import io
    import logging

    from raf.cli._render import StreamPrinter
    from raf.core.responses import AgentResponseUpdate, FinishReason, UpdateKind

    screen = io.StringIO()
    printer = StreamPrinter(screen, screen)  # as `raf chat` has it: one stream
    local = logging.getLogger("raf.clients.local")
    with printer.warnings():
        printer.show(AgentResponseUpdate(kind=UpdateKind.TEXT_DELTA, message_id="m", text="Tide"))
        local.warning("the local model repeated itself (%r ...)", "Tide")
        printer.show(AgentResponseUpdate(kind=UpdateKind.FINISHED, finish_reason=FinishReason.STOP))
    local.warning("not while nothing streams")
    assert screen.getvalue() == "Tide\nthe local model repeated itself ('Tide' ...)\n"


def test_an_empty_answer_exits_4_and_says_what_to_try(tmp_path):
    write_agent(tmp_path, SIMPLE)
    done = raf(tmp_path, "run", "agent.yaml", "hi", "--model", script(tmp_path, [""]))
    assert done.returncode == 4, done.stderr
    assert done.stdout == ""
    assert "raf: no whole answer (empty_answer): the model finished without an answer" in (
        done.stderr
    )
    assert "larger model" in done.stderr


def test_a_cut_off_answer_exits_4_after_the_text_on_a_line_of_its_own(tmp_path):
    write_agent(tmp_path, SIMPLE)
    model = script(tmp_path, [{"text": "The tide comes in tw", "finish": "length"}])
    for extra in ((), ("--json",)):
        done = raf(tmp_path, "run", "agent.yaml", "tides?", "--model", model, *extra)
        assert done.returncode == 4, done.stderr
        assert "(cut_off): the answer was cut off at the model's output limit" in done.stderr
        assert "maxTokens" in done.stderr
    assert raf(tmp_path, "run", "agent.yaml", "tides?", "--model", model).stdout == (
        "The tide comes in tw\n"
    )


def test_ask_exits_4_on_a_cut_answer_and_names_max_tokens(tmp_path):
    model = script(tmp_path, [{"text": "The tide", "finish": "length"}, ""], name="ask.json")
    done = raf(tmp_path, "ask", "tides?", "--model", model)
    assert done.returncode == 4, done.stderr
    assert done.stdout == "The tide\n" and "raise --max-tokens" in done.stderr
