"""`raf validate`, `raf run` and `raf chat` on workflow documents."""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import pexpect

from .helpers import raf, raf_env, script

DATA = Path(__file__).resolve().parents[1] / "data" / "workflows"


def copy(tmp_path: Path, *names: str) -> None:
    for name in names:
        source = DATA / name if (DATA / name).exists() else DATA / "actions" / name
        shutil.copy(source, tmp_path / name)


def test_validate_accepts_workflows_and_locates_their_problems(tmp_path: Path) -> None:
    copy(tmp_path, "workflow_basic.yaml", "graph_pipeline.json")
    ok = raf(tmp_path, "validate", "workflow_basic.yaml", "graph_pipeline.json")
    assert ok.returncode == 0, ok.stderr
    assert "workflow_basic.yaml: ok (workflow greeting-workflow)" in ok.stdout
    broken = tmp_path / "broken.yaml"
    text = (DATA / "workflow_basic.yaml").read_text(encoding="utf-8")
    broken.write_text(text.replace("kind: SendActivity", "kind: SendActivty"), encoding="utf-8")
    bad = raf(tmp_path, "validate", "broken.yaml")
    assert bad.returncode == 1
    assert "broken.yaml:17:13" in bad.stderr
    assert "did you mean 'SendActivity'?" in bad.stderr


def test_run_greets_by_name(tmp_path: Path) -> None:
    copy(tmp_path, "workflow_basic.yaml")
    done = raf(tmp_path, "run", "workflow_basic.yaml", "Ada")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Hello, Ada!"


def test_run_uses_the_model_for_the_documents_agents(tmp_path: Path) -> None:
    copy(tmp_path, "InvokeAgent.yaml")
    model = script(tmp_path, ["Waves fold the shore."])
    done = raf(tmp_path, "run", "InvokeAgent.yaml", "sea", "--model", model)
    assert done.returncode == 0, done.stderr
    assert "~ Waves fold the shore. ~" in done.stdout


def test_a_question_pauses_the_run_and_the_next_prompt_answers_it(tmp_path: Path) -> None:
    copy(tmp_path, "Question.yaml")
    first = raf(tmp_path, "run", "Question.yaml", "hi", "--session", "q1")
    assert first.returncode == 3, first.stderr
    assert "What is your name?" in first.stderr
    assert '--session q1 "ANSWER"' in first.stderr
    second = raf(tmp_path, "run", "Question.yaml", "Lin", "--session", "q1")
    assert second.returncode == 0, second.stderr
    assert "Nice to meet you, Lin!" in second.stdout


def test_chat_runs_a_workflow_and_asks_its_questions(tmp_path: Path) -> None:
    copy(tmp_path, "Question.yaml")
    child = pexpect.spawn(
        sys.executable,
        ["-m", "raf.cli", "chat", "Question.yaml"],
        cwd=str(tmp_path),
        env=raf_env(tmp_path),
        encoding="utf-8",
        timeout=30,
        dimensions=(40, 200),
    )
    try:
        child.expect("raf chat — question")
        child.expect("you> ")
        child.sendline("hello")
        child.expect(re.escape("What is your name?"))
        child.expect("answer> ")
        child.sendline("Kim")
        child.expect(re.escape("Nice to meet you, Kim!"))
        child.expect("you> ")
        child.sendline("/quit")
        child.expect(pexpect.EOF)
    finally:
        if child.isalive():
            child.terminate(force=True)


def test_run_asks_the_pipelines_approval_and_resumes_by_session(tmp_path: Path) -> None:
    pipeline = Path(__file__).resolve().parents[2] / "examples" / "research-pipeline"
    shutil.copy(pipeline / "workflow.yaml", tmp_path / "workflow.yaml")
    replies = ["plan", "finding 1", "finding 2", "finding 3", "THE REPORT"]
    first = raf(
        tmp_path,
        "run",
        "workflow.yaml",
        "tides",
        "--session",
        "p1",
        "--model",
        script(tmp_path, replies),
    )
    assert first.returncode == 3, first.stderr
    assert "Publish this report?" in first.stderr
    assert "--session p1 --approve all|none" in first.stderr
    second = raf(
        tmp_path,
        "run",
        "workflow.yaml",
        "--session",
        "p1",
        "--approve",
        "none",
        "--model",
        script(tmp_path, [], name="none.json"),
    )
    assert second.returncode == 0, second.stderr
    assert "The report was not published." in second.stdout


def test_run_gives_the_prompt_to_the_one_declared_input(tmp_path: Path) -> None:
    copy(tmp_path, "maf_conditional.yaml")
    done = raf(tmp_path, "run", "maf_conditional.yaml", "70")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Group: senior; next year 71"
